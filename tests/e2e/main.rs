//! End-to-end tests: the real server and clients over loopback gRPC.

mod delta;
mod examples;
mod harness;
mod large;
mod reload;
mod sotw;
mod streams;
