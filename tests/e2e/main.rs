//! End-to-end tests: the real server and clients over loopback gRPC.

mod app;
mod check;
mod client_deps;
mod client_large;
mod client_nack;
mod client_restart;
mod client_sources;
mod client_sources_file;
mod client_support;
mod client_sync;
mod conformance;
mod csds;
mod delta;
mod examples;
mod faults;
mod federation;
mod fleet;
mod harness;
mod large;
mod page;
mod per_type;
mod record;
mod reload;
mod replay;
mod rest;
mod security;
mod sotw;
mod status;

mod streams;
mod tap;
mod testkit;
mod testkit_faults;
mod transcript_golden;
mod ttl;
mod versions;
