//! Keeping secret material out of error messages, which end up in logs and in `/status`.
//!
//! First line: a structural rule. Errors about a value in an SDS `Secret`, or under a field
//! whose name says it holds secret material (`private_key`, `password`, `pkcs12`,
//! `session_ticket_keys`, `generic_secret`, `secret`, ...), never quote values: every quoted
//! literal in the message is replaced. Second line: whatever the message, text that looks like
//! a PEM block or a private key is cut out.

use std::borrow::Cow;

use crate::{DecodeError, locate::Step, type_url};

/// Parts of field names (lower case, without `_`) that mark secret material. Containment, not
/// equality: `client_secret`, `hmac_secret`, `private_key_provider` are covered too.
const SECRET_WORDS: &[&str] = &[
    "privatekey",
    "password",
    "secret",
    "pkcs12",
    "sessionticketkey",
];

/// Text that is secret material wherever it shows up.
const MARKERS: &[&str] = &["-----BEGIN", "PRIVATE KEY"];

/// What replaces a quoted value that may be secret.
pub const REDACTED: &str = "<redacted>";

/// Whether the value at `path` in a resource of `type_url` may be secret material.
pub fn holds_secret(type_url: &str, path: &[Step]) -> bool {
    type_url == type_url::SECRET || path.iter().filter_map(Step::name).any(is_secret_name)
}

fn is_secret_name(name: &str) -> bool {
    let normal: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    SECRET_WORDS.iter().any(|word| normal.contains(word))
}

/// A decoder message about a secret value, with every quoted literal (`"…"`, `'…'`, `` `…` ``)
/// replaced by [`REDACTED`]. The name in "unrecognized field name 'x'" is a key the user
/// typed, not a value, and is what they need to see; it is kept. A base64 error names the
/// offending byte and its offset, unquoted: only its kind is kept.
pub fn redact_values(message: &str) -> String {
    if message.starts_with("unrecognized field name '") {
        return message.to_string();
    }
    if message.starts_with("invalid base64") {
        return format!("invalid base64 ({REDACTED} details)");
    }
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        if !matches!(c, '"' | '\'' | '`') {
            out.push(c);
            continue;
        }
        let mut escaped = false;
        for next in chars.by_ref() {
            match next {
                '\\' if c == '"' && !escaped => escaped = true,
                end if end == c && !escaped => break,
                _ => escaped = false,
            }
        }
        out.push_str(REDACTED);
    }
    out
}

/// `text` with anything from a secret marker on cut out (last line of defence).
pub fn scrub(text: &str) -> Cow<'_, str> {
    let cut = MARKERS.iter().filter_map(|m| text.find(m)).min();
    match cut {
        None => Cow::Borrowed(text),
        Some(at) => Cow::Owned(format!(
            "{}{REDACTED} (secret material not shown)",
            &text[..at]
        )),
    }
}

impl DecodeError {
    /// The error with secret-looking text cut out of every part of its message.
    pub(crate) fn scrubbed(mut self) -> Self {
        for text in self.texts_mut() {
            if let Cow::Owned(clean) = scrub(text) {
                *text = clean;
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Step {
        Step::Key(name.to_string())
    }

    #[test]
    fn secret_positions_are_known_by_field_names_and_the_sds_type() {
        let tls = [
            key("common_tls_context"),
            key("tls_certificates"),
            Step::Index(0),
        ];
        assert!(!holds_secret(type_url::CLUSTER, &tls));
        for field in [
            "private_key",
            "privateKey",
            "password",
            "pkcs12",
            "session_ticket_keys",
            "sessionTicketKeys",
            "generic_secret",
            "secret",
            "hmac_secret",
        ] {
            let mut path = tls.to_vec();
            path.extend([key(field), key("inline_string")]);
            assert!(holds_secret(type_url::CLUSTER, &path), "{field}");
        }
        assert!(holds_secret(type_url::SECRET, &[key("name")]));
    }

    #[test]
    fn redaction_replaces_every_quoted_value_but_keeps_unknown_field_names() {
        let message = r#"invalid type: string "-----BEGIN \"x\" KEY", expected a map"#;
        assert_eq!(
            redact_values(message),
            "invalid type: string <redacted>, expected a map"
        );
        assert_eq!(
            redact_values("unrecognized enum value 'hunter2'"),
            "unrecognized enum value <redacted>"
        );
        assert_eq!(
            redact_values("unrecognized field name 'inline_strin'"),
            "unrecognized field name 'inline_strin'"
        );
        assert_eq!(
            redact_values("invalid base64: Invalid symbol 45, offset 0."),
            "invalid base64 (<redacted> details)"
        );
    }

    #[test]
    fn scrub_cuts_from_the_first_marker() {
        assert_eq!(scrub("no secrets here"), "no secrets here");
        let scrubbed = scrub("bad: \"-----BEGIN RSA PRIVATE KEY-----\nMIIE\"");
        assert_eq!(scrubbed, "bad: \"<redacted> (secret material not shown)");
        assert!(!scrub("the PRIVATE KEY is x").contains("is x"));
    }
}
