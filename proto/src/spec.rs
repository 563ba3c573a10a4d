//! The xDS protocol spec as data: every normative sentence of Envoy's `xds_protocol.rst` and of
//! the `discovery.proto` comments, read from `spec/xds_protocol.yaml` (its header says how the
//! file was made and what each field means).
//!
//! Both ends judge by it: `xdsloop-client check` names the sentences each check enforces, the
//! server's judge of clients names the sentences each rule enforces, and every FAIL or violation
//! quotes its sentence from here. The file is the list; nothing else restates the spec.

use std::{collections::BTreeMap, fmt, sync::OnceLock};

use serde::{Deserialize, Serialize};

/// The file, compiled in.
const TEXT: &str = include_str!("../spec/xds_protocol.yaml");

/// Where the sentences were read from.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Sources {
    /// The protocol page.
    pub rst: RstSource,
    /// The comments of `discovery.proto`, as the pinned `envoy-types` crate ships them.
    pub proto: ProtoSource,
}

/// `envoyproxy/envoy`'s `xds_protocol.rst` at a pinned commit.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RstSource {
    /// GitHub `owner/name`: `envoyproxy/envoy`.
    pub repository: String,
    /// The page's path in that repository.
    pub path: String,
    /// The full commit hash the quotes were taken at.
    pub commit: String,
}

/// `discovery.proto`'s comments inside a pinned crate.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProtoSource {
    /// The crate's name (`envoy-types`); `crate` in the file.
    #[serde(rename = "crate")]
    pub krate: String,
    /// The crate's exact version, the one `Cargo.lock` pins.
    pub version: String,
    /// The `.proto` file the comments come from, as Envoy's API tree names it.
    pub path: String,
    /// The proto package whose generated module holds the comments
    /// (`envoy.service.discovery.v3`).
    pub module: String,
}

/// Which of the two sources a sentence is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The protocol page, `xds_protocol.rst`.
    Rst,
    /// A comment of `discovery.proto`.
    Proto,
}

/// The word the spec uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Level {
    /// "must": an absolute requirement.
    #[serde(rename = "MUST")]
    Must,
    /// "must not": an absolute prohibition.
    #[serde(rename = "MUST NOT")]
    MustNot,
    /// "should": a requirement that may be set aside for a good reason.
    #[serde(rename = "SHOULD")]
    Should,
    /// "should not": a prohibition that may be set aside for a good reason.
    #[serde(rename = "SHOULD NOT")]
    ShouldNot,
    /// "may", or a "need not": a permission.
    #[serde(rename = "MAY")]
    May,
    /// "required": read as MUST.
    #[serde(rename = "REQUIRED")]
    Required,
    /// "will": a requirement only in our reading.
    #[serde(rename = "WILL")]
    Will,
    /// "is expected to": a requirement only in our reading.
    #[serde(rename = "EXPECTED")]
    Expected,
    /// A rule stated without any of these words ("It is an error for a server to ...").
    #[serde(rename = "STATED")]
    Stated,
}

impl Level {
    /// As the file writes it (`MUST NOT`).
    pub fn word(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::MustNot => "MUST NOT",
            Level::Should => "SHOULD",
            Level::ShouldNot => "SHOULD NOT",
            Level::May => "MAY",
            Level::Required => "REQUIRED",
            Level::Will => "WILL",
            Level::Expected => "EXPECTED",
            Level::Stated => "STATED",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// How binding a sentence is: a breach of a MUST (NOT) fails a run, of a SHOULD (NOT) only when
/// asked to be strict; a MAY grants something and is never broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
pub enum Strength {
    /// Something the party must do; not doing it fails a run.
    #[serde(rename = "MUST")]
    Must,
    /// Something the party must not do; doing it fails a run.
    #[serde(rename = "MUST NOT")]
    MustNot,
    /// Something the party should do; not doing it fails only a strict run.
    #[serde(rename = "SHOULD")]
    Should,
    /// Something the party should not do; doing it fails only a strict run.
    #[serde(rename = "SHOULD NOT")]
    ShouldNot,
    /// A permission: the party may do it or not.
    #[serde(rename = "MAY")]
    May,
}

impl Strength {
    /// MUST or MUST NOT.
    pub fn is_must(self) -> bool {
        matches!(self, Strength::Must | Strength::MustNot)
    }

    /// `MUST NOT`, as the spec writes it.
    pub fn word(self) -> &'static str {
        match self {
            Strength::Must => "MUST",
            Strength::MustNot => "MUST NOT",
            Strength::Should => "SHOULD",
            Strength::ShouldNot => "SHOULD NOT",
            Strength::May => "MAY",
        }
    }
}

impl fmt::Display for Strength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// Who has to act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Binds {
    /// Only the management server has to act.
    Server,
    /// Only the xDS client has to act.
    Client,
    /// Server and client alike.
    Both,
}

impl Binds {
    /// Whether a server must follow it.
    pub fn server(self) -> bool {
        matches!(self, Binds::Server | Binds::Both)
    }

    /// Whether a client must follow it.
    pub fn client(self) -> bool {
        matches!(self, Binds::Client | Binds::Both)
    }
}

/// Where a sentence applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// State of the World over gRPC.
    Sotw,
    /// Incremental (Delta) over gRPC.
    Delta,
    /// Both gRPC variants.
    Both,
    /// REST-JSON polling.
    Rest,
    /// Filesystem subscriptions.
    Filesystem,
    /// Every transport.
    Any,
}

impl Scope {
    /// As the file writes it.
    pub fn word(self) -> &'static str {
        match self {
            Scope::Sotw => "sotw",
            Scope::Delta => "delta",
            Scope::Both => "both",
            Scope::Rest => "rest",
            Scope::Filesystem => "filesystem",
            Scope::Any => "any",
        }
    }
}

/// Whether a peer can see on the wire that the sentence is followed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Observable {
    /// `true`: it can.
    Yes(bool),
    /// It cannot, for this reason.
    No(String),
}

impl Observable {
    /// The reason it cannot be seen on the wire, if it cannot.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Observable::Yes(_) => None,
            Observable::No(reason) => Some(reason),
        }
    }
}

/// What holds xdsloop to a sentence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Coverage {
    /// `xdsloop-client check` checks that judge a server by it.
    #[serde(default)]
    pub check: Vec<String>,
    /// Rules of the server's judge that judge a client by it.
    #[serde(default)]
    pub judge: Vec<String>,
    /// Tests of xdsloop-server (`path::function`).
    #[serde(default)]
    pub server_tests: Vec<String>,
    /// Tests of xdsloop-client (`path::function`).
    #[serde(default)]
    pub client_tests: Vec<String>,
}

impl Coverage {
    /// Nothing covers it.
    pub fn is_empty(&self) -> bool {
        self.check.is_empty()
            && self.judge.is_empty()
            && self.server_tests.is_empty()
            && self.client_tests.is_empty()
    }
}

/// One normative sentence.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Sentence {
    /// Section slug and ordinal: `resource-hints.2`, `proto.delta-request.5`.
    pub id: String,
    /// The section title, or for the proto `Message.field`.
    pub section: String,
    /// Which source the sentence is from.
    pub source: Origin,
    /// The sentence, word for word (markup rendered to its text).
    pub quote: String,
    /// The normative word the sentence uses, upper-cased.
    pub level: Level,
    /// How binding our reading makes a WILL, EXPECTED or STATED sentence.
    #[serde(default)]
    strength: Option<Strength>,
    /// Where our reading goes beyond the words.
    #[serde(default)]
    pub reading: Option<String>,
    /// Who has to act: server, client or both.
    pub binds: Binds,
    /// The transport variant it applies on (SotW, Delta, REST, filesystem, ...).
    pub variant: Scope,
    /// Whether a peer can see on the wire that it is followed, or why not.
    pub observable: Observable,
    /// The checks, judge rules and tests that hold xdsloop to it; empty when none do.
    #[serde(default)]
    pub covered_by: Coverage,
}

impl Sentence {
    /// How binding it is: the spec's own word, or for WILL, EXPECTED and STATED our reading
    /// (WILL and REQUIRED read as MUST, EXPECTED as SHOULD, unless the entry says otherwise).
    pub fn strength(&self) -> Strength {
        if let Some(strength) = self.strength {
            return strength;
        }
        match self.level {
            Level::Must | Level::Required | Level::Will | Level::Stated => Strength::Must,
            Level::MustNot => Strength::MustNot,
            Level::Should | Level::Expected => Strength::Should,
            Level::ShouldNot => Strength::ShouldNot,
            Level::May => Strength::May,
        }
    }

    /// Whether our reading goes beyond the spec's words: a WILL, EXPECTED or STATED sentence
    /// taken as binding.
    pub fn strength_is_our_reading(&self) -> bool {
        matches!(self.level, Level::Will | Level::Expected | Level::Stated)
    }

    /// A requirement (not a permission).
    pub fn is_requirement(&self) -> bool {
        self.strength() != Strength::May
    }

    /// The section's slug: the id without its ordinal (`resource-hints`).
    pub fn slug(&self) -> &str {
        self.id.rsplit_once('.').map_or(&self.id, |(slug, _)| slug)
    }

    /// `"<quote>" (<section>)`, and the level where our reading sets it.
    pub fn cite(&self) -> String {
        let mut cited = format!("{} \"{}\" ({})", self.id, self.quote, self.section);
        if self.strength_is_our_reading() {
            cited += &format!("; {} is xdsloop's reading", self.strength());
        }
        cited
    }
}

/// A sentence that has one of the words but states no requirement, and why.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Informative {
    /// The section title, or for the proto `Message.field`.
    pub section: String,
    /// Which source the sentence is from.
    pub source: Origin,
    /// The sentence, word for word (markup rendered to its text).
    pub quote: String,
    /// Why it is not normative, e.g. a "will" that describes what Envoy does.
    pub why: String,
}

/// The whole file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The pinned sources the quotes were taken from.
    pub source: Sources,
    /// Every normative sentence, in the order the sources have them.
    pub sentences: Vec<Sentence>,
    /// Every sentence that uses one of the words without stating a requirement.
    pub informative: Vec<Informative>,
}

impl Spec {
    /// The sentence `id`.
    pub fn sentence(&self, id: &str) -> Option<&Sentence> {
        self.sentences.iter().find(|s| s.id == id)
    }

    /// Section slugs in the order the spec has them, each with its title.
    pub fn sections(&self) -> Vec<(&str, &str)> {
        let mut seen = BTreeMap::new();
        let mut out = Vec::new();
        for s in &self.sentences {
            if seen.insert(s.slug(), ()).is_none() {
                out.push((s.slug(), section_title(s)));
            }
        }
        out
    }
}

/// A proto sentence's section is `Message.field`; its heading is the message.
fn section_title(s: &Sentence) -> &str {
    match s.source {
        Origin::Rst => &s.section,
        Origin::Proto => s.section.split('.').next().unwrap_or(&s.section),
    }
}

/// The spec, parsed once. The file is compiled in and checked by the workspace's tests, so a
/// failure here is a build of a broken file.
pub fn spec() -> &'static Spec {
    static SPEC: OnceLock<Spec> = OnceLock::new();
    SPEC.get_or_init(|| parse(TEXT).unwrap_or_else(|e| panic!("spec/xds_protocol.yaml: {e}")))
}

/// The sentence `id` of [`spec`].
pub fn sentence(id: &str) -> Option<&'static Sentence> {
    spec().sentence(id)
}

/// Parses a sentence file (the compiled-in one is [`spec`]).
pub fn parse(text: &str) -> Result<Spec, String> {
    let spec: Spec = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    let mut ids = BTreeMap::new();
    for s in &spec.sentences {
        if ids.insert(s.id.as_str(), ()).is_some() {
            return Err(format!("sentence id {} is listed twice", s.id));
        }
        if s.observable == Observable::Yes(false) {
            return Err(format!(
                "{}: observable is true or a reason, not false",
                s.id
            ));
        }
        if s.level == Level::Stated && s.strength.is_none() {
            return Err(format!(
                "{}: a STATED sentence says how binding we read it",
                s.id
            ));
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_file_parses_and_reads_levels_as_the_spec_words_them() {
        let spec = spec();
        assert!(spec.sentences.len() > 100, "{}", spec.sentences.len());
        let stale = spec.sentence("resource-updates.3").unwrap();
        assert_eq!(stale.level, Level::ShouldNot);
        assert_eq!(stale.strength(), Strength::ShouldNot);
        assert!(!stale.strength_is_our_reading());
        let will = spec
            .sentences
            .iter()
            .find(|s| s.level == Level::Will)
            .unwrap();
        assert_eq!(will.strength(), Strength::Must);
        assert!(will.cite().ends_with("MUST is xdsloop's reading"));
        assert_eq!(stale.slug(), "resource-updates");
        assert_eq!(spec.sections()[0].0, "pgv-annotations");
    }

    #[test]
    fn a_broken_file_is_refused_with_the_reason() {
        let base = "source: {rst: {repository: r, path: p, commit: c}, proto: {crate: c, version: v, path: p, module: m}}\ninformative: []\nsentences:\n";
        let entry = |id: &str, level: &str| {
            format!(
                "  - {{id: {id}, section: S, source: rst, quote: q, level: {level}, binds: server, variant: both, observable: true}}\n"
            )
        };
        let twice = format!("{base}{}{}", entry("a.1", "MUST"), entry("a.1", "MUST"));
        assert!(parse(&twice).unwrap_err().contains("a.1 is listed twice"));
        let stated = format!("{base}{}", entry("a.1", "STATED"));
        assert!(parse(&stated).unwrap_err().contains("says how binding"));
        let unknown = format!(
            "{base}  - {{id: a.1, section: S, source: rst, quote: q, level: MUST, binds: server, variant: both, observable: true, colour: red}}\n"
        );
        assert!(
            parse(&unknown)
                .unwrap_err()
                .contains("unknown field `colour`")
        );
        let level = format!("{base}{}", entry("a.1", "OUGHT"));
        assert!(parse(&level).is_err());
    }
}
