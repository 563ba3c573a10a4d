//! End-to-end tests: the real server and clients over loopback gRPC.

mod examples;
mod reload;
