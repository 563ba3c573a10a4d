//! The deliberately broken files of `fixtures/invalid`, and what the rejection of each must
//! say: the one table every end-to-end test of rejected edits reads, so that editing one of
//! those files means editing one row. (The decoder's own unit tests, in the proto crate, write
//! their inputs inline.)

use std::path::{Path, PathBuf};

/// One file of `fixtures/invalid`.
pub(crate) struct Invalid {
    pub file: &'static str,
    /// The line its rejection names (`FILE: line N, column M: …`); `None` for a rule across
    /// resources rather than a place in the text.
    pub line: Option<u32>,
    /// What else the rejection must say: the resource, the field, the rule.
    pub says: &'static [&'static str],
}

pub(crate) const INVALID: &[Invalid] = &[
    row("bad-syntax.yaml", Some(7), &["did not find expected"]),
    row("bad-syntax.json", Some(4), &["expected `,` or `}`"]),
    row(
        "unknown-field.yaml",
        Some(5),
        &["Cluster \"typo\"", "conect_timeout"],
    ),
    row(
        "wrong-type.yaml",
        Some(6),
        &["\"wrong-type\"", "endpoints[0].load_balancing_weight"],
    ),
    row(
        "unknown-type.yaml",
        Some(2),
        &["unknown @type", "envoy.config.cluster.v3.Clustr"],
    ),
    row(
        "bad-type-prefix.yaml",
        Some(3),
        &[
            "\"example.com/envoy.config.cluster.v3.Cluster\" must be",
            "type.googleapis.com/<message name>",
        ],
    ),
    row("missing-type.yaml", Some(2), &["missing \"@type\""]),
    row("duplicate-key.yaml", Some(5), &["duplicate key `name`"]),
    row("duplicate-key.json", Some(9), &["duplicate key `sni`"]),
    row("nan-weight.yaml", Some(6), &["NaN is not allowed"]),
    row(
        "enum-number.yaml",
        Some(5),
        &["field `lb_policy`: 99 is not a value", "ROUND_ROBIN (0)"],
    ),
    row(
        "secret-not-a-map.yaml",
        Some(7),
        &["tls_certificate.private_key", "<redacted>"],
    ),
    row(
        "duplicate-name.yaml",
        None,
        &["duplicate name", "Cluster \"twice\""],
    ),
    row("missing-name.yaml", Some(2), &["cluster_name"]),
];

const fn row(file: &'static str, line: Option<u32>, says: &'static [&'static str]) -> Invalid {
    Invalid { file, line, says }
}

/// Text of the fake private key in `secret-not-a-map.yaml`: no rejection may quote it.
pub(crate) const SECRET_TEXT: &[&str] = &["PRIVATE KEY", "Tk9ULUEt"];

impl Invalid {
    /// The shipped file.
    pub(crate) fn source(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/invalid")
            .join(self.file)
    }

    /// Asserts that `error`, the rejection of this file copied to `path`, names the file, the
    /// line and what the row says, and quotes no secret.
    pub(crate) fn assert_rejection(&self, path: &Path, error: &str) {
        let at = match self.line {
            Some(line) => format!("{}: line {line}, column ", path.display()),
            None => format!("{}: ", path.display()),
        };
        assert!(
            error.starts_with(&at),
            "{}: expected {at:?} in {error}",
            self.file
        );
        for fragment in self.says {
            let file = self.file;
            assert!(
                error.contains(fragment),
                "{file}: expected {fragment:?} in {error}"
            );
        }
        for secret in SECRET_TEXT {
            assert!(
                !error.contains(secret),
                "{}: quotes {secret:?}: {error}",
                self.file
            );
        }
    }
}
