//! The server's command-line flags: what to serve and how ([`ServeArgs`], with the TLS,
//! admin access, secrets and limit flags of [`SecurityArgs`]), and `xdsloop-server status`'s
//! ([`StatusArgs`], reaching a protected admin endpoint with [`RemoteArgs`]). Here rather than
//! in `main.rs`, so the binary stays a thin parser and the mapping to [`Config`] is tested.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use clap::{Args, ValueEnum};
use xdsloop_proto::redact::Secrets;

use crate::{
    admin::status::remote::Output,
    admin::status::remote::RemoteAccess,
    app::{
        Config, DEFAULT_LISTEN, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIMELINE_DEPTH, Placement,
        Recording,
    },
    config::fixtures::DEFAULT_MAX_FILE_BYTES,
    error::Error,
    judge::Mode,
    net::{
        DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_STREAMS_PER_CONNECTION,
        tls::{self, ALPN_HTTP1, TlsFiles},
    },
};

/// The server's security and limit flags.
#[derive(Debug, Clone, Args)]
pub struct SecurityArgs {
    /// Serve the xDS port (gRPC, REST-JSON and the admin routes) over TLS with this PEM
    /// certificate chain. The files are watched: a new certificate is used for new
    /// connections without a restart.
    #[arg(long, value_name = "FILE", requires = "tls_key", help_heading = "TLS")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by this PEM CA (mTLS). Each stream's verified
    /// identity (subject CN, URI and DNS SANs) shows in /status and the log.
    #[arg(long, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    pub tls_client_ca: Option<PathBuf>,
    /// /status and /snapshot answer loopback peers, verified client certificates, and
    /// requests with `Authorization: Bearer TOKEN`; everyone else gets 401. /healthz and xDS
    /// stay open. Prefer the environment variable: a flag shows in `ps`.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "XDSLOOP_ADMIN_TOKEN",
        hide_env_values = true,
        help_heading = "Admin access"
    )]
    pub admin_token: Option<String>,
    /// Show secret values (SDS private keys, passwords, session ticket keys, generic secrets)
    /// in /snapshot; they are shown as `[redacted, N bytes]` otherwise. The xDS wire always
    /// carries them.
    #[arg(long, help_heading = "Admin access")]
    pub show_secrets: bool,
    /// Largest request accepted (gRPC message or REST body), in bytes; a larger one ends its
    /// stream with RESOURCE_EXHAUSTED (REST: 413) before it is read.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_REQUEST_BYTES, help_heading = "Limits")]
    pub max_request_bytes: usize,
    /// HTTP/2 streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STREAMS_PER_CONNECTION, help_heading = "Limits")]
    pub max_streams_per_connection: u32,
    /// Connections open at once, at least 1; more are refused as they arrive (a plaintext
    /// client is told why, an HTTP/2 GOAWAY or an HTTP 503) and counted in /status. There is
    /// no "unlimited": give a number above what the host's file descriptors allow.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS,
        value_parser = at_least_one, help_heading = "Limits")]
    pub max_connections: usize,
}

/// `--max-connections`: 0 would refuse every client.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err(
            "0 would refuse every connection: give at least 1 (there is no \
                      \"unlimited\": give a number above what the host allows open)"
                .into(),
        ),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

impl SecurityArgs {
    /// Writes the flags into `config`.
    pub fn apply(self, config: &mut Config) {
        if let (Some(cert), Some(key)) = (self.tls_cert, self.tls_key) {
            config.tls = Some(TlsFiles {
                cert,
                key,
                client_ca: self.tls_client_ca,
            });
        }
        config.admin_token = self.admin_token;
        config.secrets = if self.show_secrets {
            Secrets::Show
        } else {
            Secrets::Hide
        };
        config.limits.max_request_bytes = self.max_request_bytes;
        config.limits.max_streams_per_connection = self.max_streams_per_connection;
        config.limits.max_connections = self.max_connections;
    }
}

/// How `xdsloop-server status` reaches a server with TLS or an admin token.
#[derive(Debug, Clone, Args)]
pub struct RemoteArgs {
    /// The server uses TLS: trust this PEM CA for its certificate.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Present this client certificate (a server with --tls-client-ca lets verified clients
    /// read the admin data from anywhere).
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the host of --server).
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    pub tls_server_name: Option<String>,
    /// The server's --admin-token, sent as `Authorization: Bearer`.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "XDSLOOP_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,
}

impl RemoteArgs {
    /// How to reach the admin routes these flags describe: the CA to trust, the client certificate
    /// and the bearer token; an unreadable file is an error naming its flag.
    pub fn access(&self) -> Result<RemoteAccess, Error> {
        let identity = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        let tls = match &self.tls_ca {
            Some(ca) => Some(Arc::new(tls::client_config(ca, identity, &[ALPN_HTTP1])?)),
            None => None,
        };
        Ok(RemoteAccess {
            tls,
            server_name: self.tls_server_name.clone(),
            token: self.admin_token.clone(),
        })
    }
}

#[derive(Debug, Args)]
/// `xdsloop-server status`: which server, in which form, and how to reach it.
pub struct StatusArgs {
    /// The server's address: its --listen (the admin routes are on the xDS port), or its
    /// --admin ADDR if it was started with one.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub server: String,
    /// `text`: a table for a terminal; `json`: the raw /status document.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// How to reach a server with TLS or an admin token.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `status --output`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OutputFormat {
    /// A table for a terminal.
    Text,
    /// The raw `/status` document.
    Json,
}

#[derive(Debug, Args)]
/// The server's own flags: what to serve, where, and how (the security and limit flags are
/// [`SecurityArgs`]).
pub struct ServeArgs {
    /// Fixture directory, watched recursively and reloaded on every change.
    #[arg(long, value_name = "DIR", required_unless_present = "replay")]
    pub fixtures: Option<PathBuf>,
    /// Address to serve xDS on: gRPC (HTTP/2), REST-JSON (HTTP/1.1) and the admin routes; port 0
    /// picks a free port (printed on stdout).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// A FileDescriptorSet (protoc --include_imports -o FILE) with your own resource types.
    /// Repeat for several.
    #[arg(long = "descriptor-set", value_name = "FILE")]
    pub descriptor_sets: Vec<PathBuf>,
    /// How long a burst of file changes may stay quiet before it is reloaded, in milliseconds.
    /// A save whose fixture files are all complete (each closed after writing, or renamed into
    /// place) is reloaded after a 10 ms settle window (or MS, if smaller); MS is the wait after
    /// the last change while a file is still open for writing, was deleted or renamed away (an
    /// editor may be writing its replacement), a new directory appeared, or events were lost. A
    /// directory that never goes quiet is still reloaded every 20 x MS (at least 1 s).
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub debounce_ms: u64,
    /// Largest fixture file read, in bytes; a larger one is a rejected reload naming the file.
    /// The default (16 MiB, about 100,000 small clusters) is far above a hand-written or
    /// generated fixture file: it stops a pasted blob or a runaway generator from holding up
    /// every later edit while it decodes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_FILE_BYTES,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_fixture_bytes: u64,
    /// Largest gRPC response sent, in bytes (gRPC's usual default of 4 MiB is too small for
    /// large CDS and EDS sets). Requests have their own limit, --max-request-bytes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// Serve the admin routes (/status, /snapshot, /healthz, the page /, CSDS) on a listener of
    /// their own at ADDR instead of the xDS port, or `off` for none. Default: on the xDS port.
    /// Either way all but /healthz answer only loopback peers, --admin-token and verified
    /// client certificates.
    #[arg(long, value_name = "ADDR|off", value_parser = admin_placement)]
    pub admin: Option<Placement>,
    /// Events each stream keeps for /status (its `recent` list: the last requests, responses
    /// and how it ended, also for recently closed streams); 0 keeps none. Always 0 with
    /// `--admin off`.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TIMELINE_DEPTH)]
    pub timeline_depth: usize,
    /// Write a transcript to FILE: one JSON line per stream opened or closed and per request
    /// and response on every stream (names, versions, nonces, ACK/NACK, error_detail), as
    /// docs/transcripts.md describes. Read it with `xdsloop-server transcript print FILE`.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// With --record: also write every resource sent, as proto3 JSON, in each response line
    /// (secret values redacted).
    #[arg(long, requires = "record")]
    pub record_resources: bool,
    /// Misbehave on purpose, as the rules in FILE say (YAML, docs/scenarios.md): delay, drop
    /// or corrupt responses, reuse nonces, close or reset streams, withhold or flap resources,
    /// push storms, an outage of the whole xDS port (connections refused for a while, e.g. when
    /// a client first asks for a resource). Watched like the fixtures: a bad edit is refused
    /// (FILE:line:col in the log and /status) and the rules in force stay. Also
    /// GET/PUT/DELETE /scenario on the admin routes.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// TLS, admin access, secrets and limits.
    #[command(flatten)]
    pub security: SecurityArgs,
    /// Judge every client against the client rules of docs/protocol.md (C1, C4, C5, C10,
    /// C11, C12, C20) as it runs: each violation is logged with its evidence, counted per
    /// stream and shown in /status and transcripts. `off` turns the judge off.
    #[arg(long, value_enum, value_name = "on|off", default_value_t = Judging::On)]
    pub conformance: Judging,
    /// End a client's stream at its first violation, with FAILED_PRECONDITION naming the
    /// rule and the evidence (for client authors' CI: a violation fails loudly).
    #[arg(long, conflicts_with = "conformance")]
    pub strict: bool,
    /// Serve a recording instead of fixtures: a server transcript written with `--record FILE
    /// --record-resources`. Each stream is bound, at its first request, to the next recorded
    /// stream of the same node id and transport; each request must be the next one recorded
    /// for its type (nonce, ACK/NACK, version, names), and is answered with the responses
    /// recorded after it, nonces and versions as they were. A request that differs ends the
    /// stream with FAILED_PRECONDITION naming the recording's line, what it expected and what
    /// came (also in the log and /status `replay`). For reproducing a bug report offline.
    #[arg(long, value_name = "FILE", conflicts_with = "fixtures")]
    pub replay: Option<PathBuf>,
    /// With --replay: send each response as long after its request as the recorded server
    /// did (a push that came seconds after an ACK comes seconds after it again), rather than
    /// at once.
    #[arg(long, requires = "replay", conflicts_with = "fixtures")]
    pub replay_timing: bool,
}

/// `--conformance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Judging {
    /// Judge, and log and count each violation.
    On,
    /// No judge.
    Off,
}

/// `--admin ADDR`, or `--admin off`.
fn admin_placement(value: &str) -> Result<Placement, String> {
    if matches!(value, "off" | "none") {
        return Ok(Placement::Off);
    }
    let addr = value
        .parse()
        .map_err(|e| format!("{e} (expected HOST:PORT or `off`)"))?;
    Ok(Placement::Listener(addr))
}

impl ServeArgs {
    /// The server's configuration these flags describe.
    pub fn into_config(self) -> Config {
        let mut config = Config::new(self.fixtures.unwrap_or_default());
        config.listen = self.listen;
        config.descriptor_sets = self.descriptor_sets;
        config.debounce = Duration::from_millis(self.debounce_ms);
        config.max_fixture_bytes = self.max_fixture_bytes;
        config.max_message_bytes = self.max_message_bytes;
        config.admin = self.admin.unwrap_or_default();
        config.timeline_depth = self.timeline_depth;
        config.record = self.record.map(|path| Recording {
            path,
            resources: self.record_resources,
        });
        config.scenario = self.scenario;
        config.replay = self.replay;
        config.replay_timing = self.replay_timing;
        config.conformance = match (self.conformance, self.strict) {
            (Judging::Off, _) => Mode::Off,
            (Judging::On, true) => Mode::Strict,
            (Judging::On, false) => Mode::Report,
        };
        self.security.apply(&mut config);
        config
    }
}

impl OutputFormat {
    /// What `status` prints in this format.
    pub fn output(self) -> Output {
        match self {
            OutputFormat::Text => Output::Text,
            OutputFormat::Json => Output::Json,
        }
    }
}
