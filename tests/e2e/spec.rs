//! The spec as data holds: every sentence of `proto/spec/xds_protocol.yaml` names only checks,
//! judge rules and tests that exist, every check and rule is listed by the sentences it names,
//! every requirement that can be seen on the wire has a check (server) or a judge rule
//! (client), and docs/spec-coverage.md is what the file says today (`XDSLOOP_BLESS=1`
//! rewrites it after an intended change).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use xdsloop_client::check::CHECKS;
use xdsloop_proto::spec::{self, Binds, Sentence, Strength};
use xdsloop_server::JUDGE_RULES;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `path::function` names a test that exists: the file holds `fn function(`.
fn test_exists(name: &str) -> Result<(), String> {
    let (path, function) = name
        .rsplit_once("::")
        .ok_or_else(|| format!("{name}: not path::function"))?;
    let text = std::fs::read_to_string(repo().join(path))
        .map_err(|e| format!("{name}: cannot read {path}: {e}"))?;
    match text.contains(&format!("fn {function}(")) {
        true => Ok(()),
        false => Err(format!("{name}: {path} has no fn {function}")),
    }
}

fn checks_naming(sentence: &str) -> Vec<&'static str> {
    let naming = CHECKS.iter().filter(|c| c.sentences.contains(&sentence));
    naming.map(|c| c.id).collect()
}

fn rules_naming(sentence: &str) -> Vec<&'static str> {
    let naming = JUDGE_RULES
        .iter()
        .filter(|r| r.sentences.contains(&sentence));
    naming.map(|r| r.id).collect()
}

#[test]
fn every_sentence_names_checks_rules_and_tests_that_exist_and_name_it_back() {
    let problems = coverage_problems(spec::spec());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What `spec` says of coverage that is not so.
fn coverage_problems(spec: &spec::Spec) -> Vec<String> {
    let mut problems = Vec::new();
    for s in &spec.sentences {
        let c = &s.covered_by;
        if c.check != checks_naming(&s.id) {
            problems.push(format!(
                "{}: covered_by.check {:?}, but the checks naming it are {:?}",
                s.id,
                c.check,
                checks_naming(&s.id)
            ));
        }
        let mut judge = c.judge.clone();
        judge.sort();
        let mut naming = rules_naming(&s.id);
        naming.sort_unstable();
        if judge != naming {
            problems.push(format!(
                "{}: covered_by.judge {judge:?}, but the rules naming it are {naming:?}",
                s.id
            ));
        }
        for test in c.server_tests.iter().chain(&c.client_tests) {
            if let Err(e) = test_exists(test) {
                problems.push(format!("{}: {e}", s.id));
            }
        }
        if !c.server_tests.is_empty() && !s.binds.server() {
            problems.push(format!(
                "{}: server tests for a sentence that binds clients only",
                s.id
            ));
        }
        if !c.client_tests.is_empty() && !s.binds.client() {
            problems.push(format!(
                "{}: client tests for a sentence that binds servers only",
                s.id
            ));
        }
    }
    for check in CHECKS {
        for id in check.sentences {
            if spec.sentence(id).is_none() {
                problems.push(format!(
                    "check {} names {id}, which is not in the spec file",
                    check.id
                ));
            }
        }
    }
    for rule in JUDGE_RULES {
        for id in rule.sentences {
            if spec.sentence(id).is_none() {
                problems.push(format!(
                    "rule {} names {id}, which is not in the spec file",
                    rule.id
                ));
            }
        }
    }
    problems
}

/// Observable server-bound sentences no check judges, and why.
const NOT_CHECKED: &[(&str, &str)] = &[
    (
        "eventual-consistency.6",
        "the suite writes no virtual hosts: VHDS is Delta-only and on demand, and few servers \
         serve it; xdsloop-server's order is tested on its own",
    ),
    (
        "proto.delta-response.4",
        "it concerns resources sent with dynamic parameter constraints, a field the proto \
         marks not implemented; no server the suite meets sends them",
    ),
];

/// Sentences one of xdsloop's ends has no part in, and why.
const NOT_FOR_XDSLOOP: &[(&str, &str)] = &[
    (
        "proto.discovery-response.3",
        "xdsloop-client does not read resource errors (DiscoveryResponse.resource_errors)",
    ),
    (
        "proto.delta-response.6",
        "xdsloop-client does not read resource errors (DeltaDiscoveryResponse.resource_errors)",
    ),
    (
        "proto.resource.4",
        "xdsloop-client is no proxy: the sentence is for xDS proxies",
    ),
    (
        "proto.delta-response.4",
        "xdsloop-server sends no dynamic parameter constraints",
    ),
];

/// Sentences xdsloop does not yet show it follows: known gaps, and why.
const GAPS: &[(&str, &str)] = &[
    (
        "delta-subscribe.1",
        "neither end implements resource aliases (VHDS on demand): names are matched, aliases \
         are not",
    ),
    (
        "rest.1",
        "the REST source sends one poll at a time, but no test shows it",
    ),
];

fn listed(list: &[(&str, &str)], id: &str) -> bool {
    list.iter().any(|(listed, _)| *listed == id)
}

/// A requirement (not a permission) that a peer can see on the wire.
fn observable_requirement(s: &Sentence) -> bool {
    s.is_requirement() && s.observable.reason().is_none()
}

#[test]
fn every_observable_requirement_is_judged_and_every_one_is_tested_on_xdsloop() {
    let problems = requirement_problems(spec::spec());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The requirements of `spec` nothing judges or tests, unless listed with a reason.
fn requirement_problems(spec: &spec::Spec) -> Vec<String> {
    let mut problems = Vec::new();
    for s in spec.sentences.iter().filter(|s| s.is_requirement()) {
        let c = &s.covered_by;
        let wire = observable_requirement(s);
        let grpc = !matches!(s.variant, spec::Scope::Rest | spec::Scope::Filesystem);
        let judged = !c.check.is_empty() || !c.judge.is_empty();
        let missing = match s.binds {
            Binds::Server if c.check.is_empty() => Some("no check"),
            Binds::Client if c.judge.is_empty() => Some("no judge rule"),
            Binds::Both if !judged => Some("neither a check nor a judge rule"),
            _ => None,
        };
        let excused = listed(NOT_CHECKED, &s.id) || listed(GAPS, &s.id);
        if let Some(missing) = missing.filter(|_| wire && grpc && !excused) {
            problems.push(format!("{} can be seen on the wire: {missing}", s.id));
        }
        let exempt = listed(NOT_FOR_XDSLOOP, &s.id) || listed(GAPS, &s.id);
        if s.binds.server() && c.server_tests.is_empty() && !exempt {
            problems.push(format!("{} binds servers: no test of xdsloop-server", s.id));
        }
        if s.binds.client() && c.client_tests.is_empty() && !exempt {
            problems.push(format!("{} binds clients: no test of xdsloop-client", s.id));
        }
    }
    for (id, _) in NOT_CHECKED.iter().chain(NOT_FOR_XDSLOOP).chain(GAPS) {
        if spec.sentence(id).is_none() {
            problems.push(format!(
                "{id} is listed in spec.rs but not in the spec file"
            ));
        }
    }
    problems
}

/// The file as committed, with `from` replaced by `to` once, parsed.
fn broken(from: &str, to: &str) -> spec::Spec {
    let text = std::fs::read_to_string(repo().join("proto/spec/xds_protocol.yaml")).unwrap();
    assert!(text.contains(from), "the file no longer holds {from:?}");
    spec::parse(&text.replacen(from, to, 1)).unwrap()
}

#[test]
fn a_broken_spec_file_is_refused_with_what_is_wrong() {
    let gone = broken(
        "::xdsloop_server_passes_every_check_and_the_directory_is_put_back",
        "::no_such_test",
    );
    let found = coverage_problems(&gone).join("\n");
    assert!(found.contains("has no fn no_such_test"), "{found}");
    let unlisted = broken("{check: [resource-updates.3], ", "{");
    let found = coverage_problems(&unlisted).join("\n");
    assert!(
        found.contains("resource-updates.3: covered_by.check [], but the checks naming it are [\"resource-updates.3\"]"),
        "{found}"
    );
    let unjudged = broken("judge: [C2.type-url]", "judge: []");
    let found = requirement_problems(&unjudged).join("\n");
    assert!(
        found.contains("proto.discovery-request.5 can be seen on the wire: no judge rule"),
        "{found}"
    );
}

/// docs/spec-coverage.md, from the spec file, the checks and the judge's rules.
fn coverage_doc() -> String {
    let spec = spec::spec();
    let mut doc = String::new();
    let _ = writeln!(doc, "# The xDS spec, sentence by sentence\n");
    let _ = writeln!(
        doc,
        "<!-- Generated by `cargo test -p xdsloop-tests --test e2e spec::` from \
         proto/spec/xds_protocol.yaml; XDSLOOP_BLESS=1 rewrites it. Do not edit by hand. -->\n"
    );
    let _ = writeln!(
        doc,
        "Every normative sentence of Envoy's [`{}`](https://github.com/{}/blob/{}/{}) (commit \
         `{}`) and of the comments of `{}` (as the `{}` crate {} ships them), with what holds \
         xdsloop to it: `xdsloop-client check` for servers, the server's judge for clients, and \
         the tests of xdsloop's own two ends. The file behind it is \
         [proto/spec/xds_protocol.yaml](../proto/spec/xds_protocol.yaml); `xdsloop-client \
         check --list` prints the same.\n",
        spec.source.rst.path,
        spec.source.rst.repository,
        spec.source.rst.commit,
        spec.source.rst.path,
        &spec.source.rst.commit[..12],
        spec.source.proto.path,
        spec.source.proto.krate,
        spec.source.proto.version,
    );
    let _ = writeln!(
        doc,
        "A level is the spec's own word; STATED marks a rule stated without one (\"It is an \
         error for a server to ...\"), and for STATED, WILL and EXPECTED sentences the strength \
         we read them with is xdsloop's reading (shown as *reading*).\n"
    );
    totals(&mut doc, &spec.sentences);
    for (slug, title) in spec.sections() {
        let _ = writeln!(doc, "\n## {title}\n");
        let _ = writeln!(
            doc,
            "| id | level | binds | applies | sentence | covered by |"
        );
        let _ = writeln!(doc, "|---|---|---|---|---|---|");
        for s in spec.sentences.iter().filter(|s| s.slug() == slug) {
            let level = match s.strength_is_our_reading() {
                true => format!("{} (*reading*: {})", s.level, s.strength()),
                false => s.level.to_string(),
            };
            let _ = writeln!(
                doc,
                "| `{}` | {level} | {} | {} | {} | {} |",
                s.id,
                format!("{:?}", s.binds).to_lowercase(),
                s.variant.word(),
                s.quote.replace('|', "\\|"),
                covered(s).replace('|', "\\|"),
            );
        }
    }
    let lists = [
        ("Seen on the wire, not checked", NOT_CHECKED),
        ("Not for one of xdsloop's ends", NOT_FOR_XDSLOOP),
        ("Known gaps", GAPS),
    ];
    for (title, list) in lists {
        let _ = writeln!(doc, "\n## {title}\n");
        for (id, why) in list {
            let _ = writeln!(doc, "- `{id}`: {why}");
        }
    }
    let _ = writeln!(doc, "\n## Rules of xdsloop's own\n");
    let _ = writeln!(
        doc,
        "Judged though no sentence states them, and said so wherever they show.\n"
    );
    for c in CHECKS.iter().filter(|c| c.beyond.is_some()) {
        let _ = writeln!(doc, "- check `{}`: {}", c.id, c.beyond.unwrap_or_default());
    }
    for r in JUDGE_RULES.iter().filter(|r| r.beyond.is_some()) {
        let _ = writeln!(doc, "- judge `{}`: {}", r.id, r.beyond.unwrap_or_default());
    }
    doc
}

fn covered(s: &Sentence) -> String {
    let c = &s.covered_by;
    let mut parts = Vec::new();
    if !c.check.is_empty() {
        let ids: Vec<String> = c.check.iter().map(|id| format!("`{id}`")).collect();
        parts.push(format!("check {}", ids.join(", ")));
    }
    if !c.judge.is_empty() {
        let ids: Vec<String> = c.judge.iter().map(|id| format!("`{id}`")).collect();
        parts.push(format!("judge {}", ids.join(", ")));
    }
    let tests = |which: &str, list: &[String]| match list.len() {
        0 => None,
        n => Some(format!("{n} {which} test{}", if n == 1 { "" } else { "s" })),
    };
    parts.extend(tests("server", &c.server_tests));
    parts.extend(tests("client", &c.client_tests));
    if let Some(why) = s.observable.reason() {
        parts.push(format!("not on the wire: {why}"));
    }
    if let Some(reading) = &s.reading {
        parts.push(format!("*reading*: {reading}"));
    }
    match parts.is_empty() {
        true => "—".to_string(),
        false => parts.join("; "),
    }
}

fn totals(doc: &mut String, sentences: &[Sentence]) {
    let strengths = [
        Strength::Must,
        Strength::MustNot,
        Strength::Should,
        Strength::ShouldNot,
        Strength::May,
    ];
    let _ = writeln!(
        doc,
        "| strength | server | client | both | all | checked | judged | tested on xdsloop | not on the wire |"
    );
    let _ = writeln!(doc, "|---|---|---|---|---|---|---|---|---|");
    let mut all: BTreeMap<&str, usize> = BTreeMap::new();
    for strength in strengths {
        let of: Vec<&Sentence> = sentences
            .iter()
            .filter(|s| s.strength() == strength)
            .collect();
        let count = |f: &dyn Fn(&Sentence) -> bool| of.iter().filter(|s| f(s)).count();
        let row = [
            ("server", count(&|s| s.binds == Binds::Server)),
            ("client", count(&|s| s.binds == Binds::Client)),
            ("both", count(&|s| s.binds == Binds::Both)),
            ("all", of.len()),
            ("checked", count(&|s| !s.covered_by.check.is_empty())),
            ("judged", count(&|s| !s.covered_by.judge.is_empty())),
            (
                "tested",
                count(&|s| {
                    !s.covered_by.server_tests.is_empty() || !s.covered_by.client_tests.is_empty()
                }),
            ),
            ("hidden", count(&|s| s.observable.reason().is_some())),
        ];
        let cells: Vec<String> = row.iter().map(|(_, n)| n.to_string()).collect();
        let _ = writeln!(doc, "| {} | {} |", strength.word(), cells.join(" | "));
        for (key, n) in row {
            *all.entry(key).or_default() += n;
        }
    }
    let keys = [
        "server", "client", "both", "all", "checked", "judged", "tested", "hidden",
    ];
    let cells: Vec<String> = keys.iter().map(|k| all[k].to_string()).collect();
    let _ = writeln!(doc, "| **all** | {} |", cells.join(" | "));
}

#[test]
fn docs_spec_coverage_is_generated_from_the_spec_file() {
    let path = repo().join("docs/spec-coverage.md");
    let now = coverage_doc();
    if std::env::var_os("XDSLOOP_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == now,
        "docs/spec-coverage.md is not what proto/spec/xds_protocol.yaml says: run \
         `XDSLOOP_BLESS=1 cargo test -p xdsloop-tests --test e2e spec::` and review the diff"
    );
}
