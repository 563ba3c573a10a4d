//! The real `xdsloop-server` binary as a child process, with its CPU time and peak RSS read
//! from `/proc`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long the server may take to load its fixtures and listen.
const START_TIMEOUT: Duration = Duration::from_secs(300);

pub(crate) struct ServerProcess {
    child: Child,
    pub addr: SocketAddr,
    clock_ticks: f64,
}

/// The server binary next to this one (both built by `make bench` into the same profile).
pub(crate) fn default_binary() -> PathBuf {
    let me = std::env::current_exe().unwrap_or_default();
    me.with_file_name("xdsloop-server")
}

/// Whether the binary has a flag (by its `--help`).
pub(crate) fn supports_flag(binary: &Path, flag: &str) -> bool {
    Command::new(binary)
        .arg("--help")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).contains(flag))
        .unwrap_or(false)
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI sequences end with a letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl ServerProcess {
    /// Starts the server on a free port and waits for its "listening" log line. Unless `extra`
    /// says otherwise, the admin routes are off: the runs measure xDS alone.
    pub(crate) fn start(binary: &Path, fixtures: &Path, extra: &[String]) -> Result<Self, String> {
        let mut extra = extra.to_vec();
        if !extra.iter().any(|a| a == "--admin") && supports_flag(binary, "--admin") {
            extra.extend(["--admin".to_string(), "off".to_string()]);
        }
        let mut child = Command::new(binary)
            .arg("--fixtures")
            .arg(fixtures)
            .args(["--listen", "127.0.0.1:0"])
            .args(&extra)
            // Per-stream logs would cost the server CPU the bench is measuring.
            .env("RUST_LOG", "warn,xdsloop_server::app=info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let stderr = child.stderr.take().expect("piped");
        let (found, addr) = mpsc::channel();
        // Drains stderr for the server's whole life (a full pipe would block it).
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let line = strip_ansi(&line);
                if line.contains("WARN") || line.contains("ERROR") {
                    eprintln!("  server: {line}");
                }
                if line.contains("listening")
                    && let Some(addr) = line
                        .split_whitespace()
                        .find_map(|t| t.strip_prefix("addr="))
                        .and_then(|a| a.parse::<SocketAddr>().ok())
                    && let Some(tx) = found.take()
                {
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = match addr.recv_timeout(START_TIMEOUT) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(format!("the server did not start listening ({status})"));
            }
        };
        Ok(Self {
            child,
            addr,
            clock_ticks: clock_ticks(),
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// User + system CPU seconds of the whole process so far.
    pub(crate) fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start at field 3.
        let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
        (field(14).unwrap_or(0.0) + field(15).unwrap_or(0.0)) / self.clock_ticks
    }

    /// Peak resident set size (`VmHWM`), in bytes.
    pub(crate) fn peak_rss_bytes(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }

    pub(crate) fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// User + system CPU seconds of `/proc/<pid>` (all threads) so far.
pub(crate) fn cpu_seconds(pid: &str, clock_ticks: f64) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    (field(14).unwrap_or(0.0) + field(15).unwrap_or(0.0)) / clock_ticks
}

/// CPU seconds of this process (the in-process fleet).
pub(crate) fn own_cpu_seconds() -> f64 {
    cpu_seconds("self", clock_ticks())
}

/// `CLK_TCK`, the unit of `/proc/<pid>/stat` CPU times (100 on Linux unless told otherwise).
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// The 1-minute load average (`/proc/loadavg`), 0 if unknown.
pub(crate) fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}
