//! End-to-end tests: the real server and clients over loopback gRPC.

mod app;
mod delta;
mod examples;
mod harness;
mod large;
mod reload;
mod sotw;
mod status;
mod streams;
