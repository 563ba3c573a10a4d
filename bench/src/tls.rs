//! The TLS cell's certificates: a CA and a server certificate for 127.0.0.1, made per run by
//! the `openssl` binary in the run's temp directory (the bench takes no test-only crates).

use std::path::{Path, PathBuf};
use std::process::Command;

use xdsloop_client::ClientTls;

/// The files a TLS run serves and trusts.
pub(crate) struct Certs {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Certs {
    /// Makes them in `dir`; an error (naming openssl) if that cannot be done.
    pub(crate) fn make(dir: &Path) -> Result<Self, String> {
        let curve = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ];
        openssl(
            dir,
            &["req", "-x509"],
            &curve,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "1",
                "-subj",
                "/CN=bench CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        )?;
        std::fs::write(dir.join("server.ext"), "subjectAltName=IP:127.0.0.1\n")
            .map_err(|e| e.to_string())?;
        openssl(
            dir,
            &["req"],
            &curve,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=xdsloop-server",
            ],
        )?;
        openssl(
            dir,
            &["x509", "-req"],
            &[],
            &[
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "1",
                "-extfile",
                "server.ext",
            ],
        )?;
        Ok(Self {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        })
    }

    /// The server's flags.
    pub(crate) fn server_args(&self) -> Vec<String> {
        let path = |p: &PathBuf| p.display().to_string();
        vec![
            "--tls-cert".into(),
            path(&self.cert),
            "--tls-key".into(),
            path(&self.key),
        ]
    }

    /// The fleet's side.
    pub(crate) fn client(&self) -> Result<ClientTls, String> {
        xdsloop_client::load_tls(&self.ca, None, None).map_err(|e| e.to_string())
    }
}

fn openssl(dir: &Path, command: &[&str], curve: &[&str], args: &[&str]) -> Result<(), String> {
    let out = Command::new("openssl")
        .args(command)
        .args(curve)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("the TLS cell needs the openssl binary: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("openssl {}: {stderr}", command.join(" ")));
    }
    Ok(())
}
