//! The `xdsloop-client` binary on real runs against the real server (in-process, over a temp
//! copy of `fixtures/demo`): its text and JSON lines, `--reject`, `--dump`, how it reports
//! an unreachable or lost server, and its stderr in a pipe (no colour; `--log-format json`);
//! the `--explain` narration and the `--record` transcript of real sessions, also of TTL'd
//! resources (heartbeats, expiry); `fleet --report` to a path it cannot write.
//!
//! One test binary with a module per area (every extra binary links Envoy's types again).

mod connection;
mod explain;
mod file_source;
mod fleet;
mod logs;
mod output;
mod record;
mod support;
mod transcript;
mod ttl;
mod version;
