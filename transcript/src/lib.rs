//! xdsloop transcripts: a JSON-lines record of what passed between an xDS client and server,
//! written by either end, printed for people and compared for CI (a transcript as a golden
//! file). The format is documented in docs/transcripts.md.
//!
//! Layout (dependencies point up the list, never down):
//! - [`step`]: the steps of the xDS loop with the Envoy call behind each, and the request
//!   verdicts: the one table wherever xdsloop names a step of the loop.
//! - [`terms`]: the rest of the loop's vocabulary (applying, reconnecting, the states), in
//!   English and in the Chinese of the course lesson xdsloop grew from.
//! - [`fields`]: type URLs written as short names, RFC 3339 times.
//! - [`line`](mod@line): the line types (header, open, request, response, fault, violation, close, gap).
//! - [`write`](mod@write): the buffered line writer the recorders use, with its flush policy.
//! - [`read`]: a file back into lines, with `FILE:LINE: …` errors.
//! - [`filter`]: which lines `print` keeps (node glob, type, stream, kind).
//! - [`print`](mod@print): one readable, fixed-width line per event.
//! - [`normalize`]: what `diff` ignores: times, sequence numbers, peers, sizes; stream ids and
//!   nonces renumbered by first appearance.
//! - [`diff`]: two normalised transcripts compared per node, stream and type.
//! - [`cli`]: the `transcript print|diff` subcommand both binaries embed.
//!
//! [`error`] is the one error type, `FILE:LINE[:COLUMN]: …` for a bad line.

#[cfg(feature = "cli")]
pub mod cli;
pub mod diff;
pub mod error;
pub mod fields;
pub mod filter;
pub mod line;
pub mod normalize;
pub mod print;
pub mod read;
pub mod step;
pub mod terms;
pub mod write;

#[cfg(test)]
mod sample;

pub use error::{Error, LineError};
pub use line::{Event, Header, SCHEMA, What};
pub use read::{Transcript, read_file};
pub use step::Step;
pub use terms::Lang;
pub use write::LineWriter;
