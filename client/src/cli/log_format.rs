//! How the binary's stderr looks: `--log-format text|json`, whether text gets colour, and the
//! lines the CLI writes there itself (connection news, fleet progress, the error that ends
//! it) in the same shape as the `tracing` log lines around them.
//!
//! With `json`, every stderr line is one JSON object with `timestamp`, `level`, `target` and
//! `message` (plus the event's fields for log events), so a machine reading stderr never meets
//! a line of another kind. Installing the subscriber is `main.rs`'s job; this module only
//! decides.

use std::ffi::OsStr;
use std::time::SystemTime;

use serde_json::json;
use tracing::Level;

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, coloured only on a terminal.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The `target` of the lines the CLI writes itself.
pub const TARGET: &str = "xdsloop_client";

/// Colour only for a person at a terminal, and never when `NO_COLOR` is set to anything but
/// the empty string (<https://no-color.org>): escapes in a file or a pipe are noise.
pub fn colour(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

/// A stderr line the CLI writes itself: as text, `message` after `prefix: ` if there is one
/// (the program's name, say); as JSON, an object shaped like the log lines.
pub fn line(
    format: LogFormat,
    at: SystemTime,
    level: Level,
    prefix: Option<&str>,
    message: &str,
) -> String {
    match (format, prefix) {
        (LogFormat::Text, Some(prefix)) => format!("{prefix}: {message}"),
        (LogFormat::Text, None) => message.to_string(),
        (LogFormat::Json, _) => json!({
            "timestamp": humantime::format_rfc3339_micros(at).to_string(),
            "level": level.as_str(),
            "target": TARGET,
            "message": message,
        })
        .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_and_never_with_no_color() {
        assert!(colour(true, None));
        assert!(!colour(false, None), "a file or a pipe");
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(
            colour(true, Some(OsStr::new(""))),
            "NO_COLOR= (empty) is unset"
        );
    }

    #[test]
    fn json_lines_have_the_log_fields() {
        let at = SystemTime::UNIX_EPOCH;
        let text = line(
            LogFormat::Text,
            at,
            Level::WARN,
            Some("xdsloop-client"),
            "lost",
        );
        assert_eq!(text, "xdsloop-client: lost");
        assert_eq!(line(LogFormat::Text, at, Level::INFO, None, "3/3"), "3/3");
        let prefix = Some("xdsloop-client");
        let json = line(LogFormat::Json, at, Level::WARN, prefix, "say \"hi\"");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["timestamp"], "1970-01-01T00:00:00.000000Z");
        assert_eq!(value["level"], "WARN");
        assert_eq!(value["target"], TARGET);
        assert_eq!(value["message"], "say \"hi\"");
    }
}
