//! The `xdsloop-client` binary on real runs against the real server (in-process, over a temp
//! copy of `fixtures/demo`): its text and JSON lines, `--reject`, `--dump`, and how it reports
//! an unreachable or lost server.
//!
//! One test binary with a module per area (every extra binary links Envoy's types again).

mod connection;
mod file_source;
mod output;
mod support;
