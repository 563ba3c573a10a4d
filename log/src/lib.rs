//! How both xdsloop binaries write stderr, so that they write it the same way:
//! - `--log-format text|json` ([`LogFormat`]);
//! - text is coloured only on a terminal and never with `NO_COLOR` set ([`colour`]);
//! - the `tracing` subscriber they install ([`init`]), with its default filter;
//! - the lines a program writes itself (its fatal error, progress), shaped like the log lines
//!   around them ([`line()`]): with `json`, every stderr line is one object with `timestamp`,
//!   `level`, `message` and `target`, in the order `tracing` writes them, so a machine reading
//!   stderr never meets a line of another kind.
//!
//! Its own crate because both binaries need it and neither library is its home: the proto crate
//! is wire types and the codec, and the server and client crates do not depend on each other.

use std::{ffi::OsStr, io::IsTerminal, time::SystemTime};

use serde::Serialize;
use tracing::{Level, Subscriber};
use tracing_subscriber::{EnvFilter, fmt::MakeWriter, util::SubscriberInitExt};

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, coloured only on a terminal and never with NO_COLOR set.
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, message (and the event's fields), target.
    Json,
}

/// Colour only for a person at a terminal, and never when `NO_COLOR` is set to anything but
/// the empty string (<https://no-color.org>): escapes in a file or a pipe are noise.
pub fn colour(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

/// Installs the process's `tracing` subscriber: to stderr, in `format`, filtered by `RUST_LOG`
/// or else `default_filter` (`info`, `error`, ...). Panics if one is installed already: a
/// binary calls this once, first thing.
pub fn init(format: LogFormat, default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let no_color = std::env::var_os("NO_COLOR");
    let ansi = colour(std::io::stderr().is_terminal(), no_color.as_deref());
    subscriber(format, ansi, filter, std::io::stderr).init();
}

/// The subscriber [`init`] installs, writing to `writer` (tests capture it).
fn subscriber<W>(
    format: LogFormat,
    ansi: bool,
    filter: EnvFilter,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(logs.with_ansi(ansi).finish()),
        // The event's fields, `message` included, at the top level next to `level` and
        // `target`, like the lines of [`line`].
        LogFormat::Json => Box::new(logs.json().flatten_event(true).with_ansi(false).finish()),
    }
}

/// A stderr line a program writes itself, not through `tracing` (so `RUST_LOG` cannot hide
/// it): as text, `message` after `prefix: ` if there is one (the program's name, say); as JSON,
/// an object shaped like the log lines, from `target`.
pub fn line(
    format: LogFormat,
    level: Level,
    target: &str,
    prefix: Option<&str>,
    message: &str,
) -> String {
    line_at(SystemTime::now(), format, level, target, prefix, message)
}

/// The error that ends `program`, as [`line()`] writes it.
pub fn error_line(format: LogFormat, target: &str, program: &str, message: &str) -> String {
    line(format, Level::ERROR, target, Some(program), message)
}

/// The fields of a JSON line, in the order `tracing`'s JSON formatter writes them.
#[derive(Serialize)]
struct JsonLine<'a> {
    timestamp: String,
    level: &'a str,
    message: &'a str,
    target: &'a str,
}

fn line_at(
    at: SystemTime,
    format: LogFormat,
    level: Level,
    target: &str,
    prefix: Option<&str>,
    message: &str,
) -> String {
    match (format, prefix) {
        (LogFormat::Text, Some(prefix)) => format!("{prefix}: {message}"),
        (LogFormat::Text, None) => message.to_string(),
        (LogFormat::Json, _) => {
            let json = JsonLine {
                timestamp: humantime::format_rfc3339_micros(at).to_string(),
                level: level.as_str(),
                message,
                target,
            };
            serde_json::to_string(&json).expect("strings serialize")
        }
    }
}

#[cfg(test)]
mod tests;
