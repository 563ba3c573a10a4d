use std::{
    fmt,
    io::Write,
    sync::{Arc, Mutex},
};

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

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

/// What a subscriber wrote, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The stderr of `log` run under the subscriber [`init`] installs for `format`.
fn logged(format: LogFormat, ansi: bool, log: impl FnOnce()) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = subscriber(format, ansi, EnvFilter::new("info"), move || writer.clone());
    tracing::subscriber::with_default(subscriber, log);
    let bytes = captured.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

/// A JSON object's keys in the order they are written.
fn keys(line: &str) -> Vec<String> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some((key, IgnoredAny)) = map.next_entry::<String, IgnoredAny>()? {
                keys.push(key);
            }
            Ok(keys)
        }
    }
    let mut de = serde_json::Deserializer::from_str(line);
    de.deserialize_map(Keys).unwrap()
}

#[test]
fn own_json_lines_are_shaped_like_the_log_lines() {
    let logged = logged(LogFormat::Json, false, || {
        tracing::error!(target: "xdsloop_test", "cannot listen");
    });
    let ours = line(
        LogFormat::Json,
        Level::ERROR,
        "xdsloop_test",
        Some("xdsloop-test"),
        "cannot listen",
    );
    assert_eq!(keys(&ours), keys(logged.trim_end()), "{ours}\n{logged}");
    assert_eq!(keys(&ours), ["timestamp", "level", "message", "target"]);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&ours).unwrap(),
        serde_json::from_str(&logged).unwrap(),
    );
    for field in ["level", "message", "target"] {
        assert_eq!(a[field], b[field], "{field}");
    }
    let (a, b) = (
        a["timestamp"].as_str().unwrap(),
        b["timestamp"].as_str().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "both RFC 3339 with microseconds: {a} {b}");
}

#[test]
fn own_lines_are_the_message_after_the_prefix_or_escaped_json() {
    let at = SystemTime::UNIX_EPOCH;
    let text = |prefix| line_at(at, LogFormat::Text, Level::WARN, "t", prefix, "lost");
    assert_eq!(text(Some("xdsloop-client")), "xdsloop-client: lost");
    assert_eq!(text(None), "lost");
    let json = line_at(at, LogFormat::Json, Level::WARN, "t", None, "say \"hi\"");
    assert_eq!(
        json,
        r#"{"timestamp":"1970-01-01T00:00:00.000000Z","level":"WARN","message":"say \"hi\"","target":"t"}"#
    );
    let fatal = error_line(LogFormat::Text, "t", "xdsloop-server", "no such directory");
    assert_eq!(fatal, "xdsloop-server: no such directory");
}

#[test]
fn text_logs_carry_colour_escapes_only_when_asked() {
    let event = || tracing::warn!("careful");
    assert!(!logged(LogFormat::Text, false, event).contains("\x1b["));
    assert!(logged(LogFormat::Text, true, event).contains("\x1b["));
    assert!(!logged(LogFormat::Json, true, event).contains("\x1b["));
}
