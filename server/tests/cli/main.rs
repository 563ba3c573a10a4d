//! The `xdsloop-server` binary as users run it: real processes on free ports, their stdout and
//! stderr read line by line.
//!
//! One test binary with a module per area (every extra binary links Envoy's types again).

mod fixtures;
mod logs;
mod scenario;
mod secrets;
mod side_by_side;
mod status;
mod support;
mod tls;
mod transcript;
mod version;
