//! Every refusal points at what is wrong: the value (`delay: soon` at `soon`), or the key when
//! the key itself does not belong (`when.nth` on an `outage`), in whichever rule it is; and it
//! names that rule, by its id or, without one, by its position alone.

use super::*;

/// The line and column (1-based) where `needle` first starts in `text`, after [`FIRST`].
fn place_of(text: &str, needle: &str) -> (usize, usize) {
    let from = if text.starts_with(FIRST) {
        FIRST.len()
    } else {
        0
    };
    let offset = from
        + text[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} is in the text"));
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, offset - line_start + 1)
}

/// `text` is refused at the start of `needle`, with a message that starts `says`.
fn refused_on(text: &str, needle: &str, says: &str) -> ParseError {
    let e = error(text);
    assert_eq!((e.line, e.column), place_of(text, needle), "{e}\n{text}");
    assert!(e.message.starts_with(says), "{e} does not start {says:?}");
    e
}

/// A good rule first, so an error's place cannot be the first rule's by chance.
const FIRST: &str = "version: 1\nrules:\n  - id: first\n    do: { drop: {} }\n";

#[test]
fn an_outage_of_no_length_is_refused_at_its_length() {
    let text = format!("{FIRST}  - do:\n      outage: {{ for: 0s }}\n");
    refused_on(&text, "0s", "rules[1]: `outage.for` must be above zero");
}

#[test]
fn a_delay_that_is_not_a_duration_is_refused_at_it() {
    let text = format!(
        "{FIRST}  - do: {{ drop: {{}} }}\n  - id: slow\n    match: {{ type: cds }}\n    do: {{ delay: soon }}\n"
    );
    refused_on(
        &text,
        "soon",
        "rules[2] (slow): delay: \"soon\" is not a duration",
    );
}

#[test]
fn a_delay_beyond_a_day_is_refused_at_it() {
    let text = format!("{FIRST}  - id: long\n    do:\n      delay: 25h\n");
    refused_on(
        &text,
        "25h",
        "rules[1] (long): delay: at most 1day, not 1day 1h",
    );
}

#[test]
fn a_negative_delay_is_refused_at_it() {
    let text = format!("{FIRST}  - do: {{ delay: -5s }}\n");
    refused_on(&text, "-5s", "rules[1]: delay: \"-5s\" is not a duration");
}

#[test]
fn requested_with_a_per_stream_action_is_refused_at_requested() {
    let text = format!(
        "{FIRST}  - id: cut\n    when:\n      requested: {{ type: cds, name: web }}\n    do: {{ close: {{}} }}\n"
    );
    refused_on(
        &text,
        "requested",
        "rules[1] (cut): `when.requested` is a server-wide moment: it goes with a server-wide \
         action (`outage`), not `close`",
    );
}

/// The default id (`rule-<n>`) is not in the file: a reader finds the rule by its position.
#[test]
fn a_rule_without_an_id_is_named_by_its_position_alone() {
    let text = format!("{FIRST}  - do: {{ drop: {{}} }}\n  - do: {{ delay: 25h }}\n");
    let e = refused_on(&text, "25h", "rules[2]: delay: at most");
    assert!(!e.message.contains("rule-3"), "{e}");
}

/// What an outage takes no part in is refused at its key: the key is what does not belong.
#[test]
fn a_limit_an_outage_does_not_take_is_refused_at_its_key() {
    for (rule, key, field) in [
        ("match: { type: cds }", "type", "match.type"),
        ("when: { nth: 2 }", "nth", "when.nth"),
        ("when: { every: 2 }", "every", "when.every"),
        ("when: { version: v1 }", "version", "when.version"),
        ("when: { after_ack: v1 }", "after_ack", "when.after_ack"),
        ("per_stream: 1", "per_stream", "per_stream"),
        ("times: 3", "times", "times"),
    ] {
        let text =
            format!("{FIRST}  - id: down\n    {rule}\n    do: {{ outage: {{ for: 1s }} }}\n");
        refused_on(
            &text,
            key,
            &format!(
                "rules[1] (down): `outage` is server-wide and fires once per installation: \
                 `{field}` does not apply"
            ),
        );
    }
    let text = format!(
        "{FIRST}  - when: {{ requested: {{ type: cds, name: web }}, after: 2s }}\n    do: {{ outage: {{ for: 1s }} }}\n"
    );
    refused_on(
        &text,
        "after",
        "rules[1]: `outage` fires at `when.requested` or at `when.after`, not both",
    );
    let text =
        format!("{FIRST}  - match: {{ node: edge-* }}\n    do: {{ outage: {{ for: 1s }} }}\n");
    refused_on(
        &text,
        "match",
        "rules[1]: `outage` without `when.requested` takes down the whole port",
    );
    let text =
        format!("{FIRST}  - match: {{ service: rest }}\n    do: {{ outage: {{ for: 1s }} }}\n");
    refused_on(
        &text,
        "rest }",
        "rules[1]: `outage` is not supported with `service: rest`",
    );
}

/// A value out of its range or not of its kind is refused at the value.
#[test]
fn a_bad_value_is_refused_at_the_value() {
    for (rule, value, says) in [
        (
            "when: { nth: 0 }\n    match: { type: cds }",
            "0 }",
            "`when.nth` must be at least 1",
        ),
        (
            "match: { type: cds }\n    when: { every: 0 }",
            "0 }",
            "`when.every` must be at least 1",
        ),
        ("times: 0", "0\n", "`times` must be at least 1"),
        ("per_stream: 0", "0\n", "`per_stream` must be at least 1"),
        (
            "match: { type: xds }",
            "xds",
            "match.type: unknown type \"xds\"",
        ),
        ("when: { after: 1000d }", "1000d", "when.after: at most"),
        (
            "when: { after: later }",
            "later",
            "when.after: \"later\" is not a duration",
        ),
    ] {
        let text = format!("{FIRST}  - id: bad\n    {rule}\n    do: {{ close: {{}} }}\n");
        refused_on(&text, value, &format!("rules[1] (bad): {says}"));
    }
    for (action, value, says) in [
        (
            "close: { code: BROKEN }",
            "BROKEN",
            "close.code: \"BROKEN\" is not a gRPC code name",
        ),
        (
            "close: { code: OK }",
            "OK",
            "`close.code` OK would not close anything",
        ),
        (
            "close: { message: MESSAGE }",
            "xxx",
            "close.message: at most 1024 bytes",
        ),
        ("hang: { for: 400d }", "400d", "hang.for: at most"),
        (
            "hang: { for: ever }",
            "ever",
            "hang.for: \"ever\" is not a duration",
        ),
        (
            "oversize: { bytes: 8 parsecs }",
            "8 parsecs",
            "oversize.bytes: \"8 parsecs\": unknown unit",
        ),
        (
            "oversize: { bytes: 100GiB }",
            "100GiB",
            "oversize.bytes: at most",
        ),
        (
            "wrong_type_url: { type: edz }",
            "edz",
            "wrong_type_url.type: unknown type \"edz\"",
        ),
        ("outage: { for: 1000d }", "1000d", "outage.for: at most"),
        (
            "outage: { for: soon }",
            "soon",
            "outage.for: \"soon\" is not a duration",
        ),
    ] {
        let action = action.replace("MESSAGE", &"x".repeat(2000));
        let text =
            format!("{FIRST}  - id: bad\n    match: {{ type: cds }}\n    do:\n      {action}\n");
        refused_on(&text, value, &format!("rules[1] (bad): {says}"));
    }
    for (action, value, says) in [
        (
            "flap: { names: [web], period: 1ms }",
            "1ms",
            "flap.period: at least 10ms",
        ),
        (
            "flap: { names: [web], period: 0s }",
            "0s",
            "`flap.period` must be above zero",
        ),
        (
            "flap: { names: [], period: 1s }",
            "[]",
            "`flap` needs at least one name",
        ),
        (
            "withhold: { names: [] }",
            "[]",
            "`withhold` needs at least one name",
        ),
    ] {
        let text =
            format!("{FIRST}  - id: bad\n    match: {{ type: cds }}\n    do: {{ {action} }}\n");
        refused_on(&text, value, &format!("rules[1] (bad): {says}"));
    }
    let text = format!("{FIRST}  - id: Has Spaces\n    do: {{ drop: {{}} }}\n");
    refused_on(
        &text,
        "Has Spaces",
        "rules[1] (Has Spaces): id \"Has Spaces\" must be [a-z0-9-]+",
    );
    refused_on("version: 2\nrules: []\n", "2", "version: 2 is not known");
}

/// A field that needs another one, or a moment a fault cannot have, is refused at that field.
#[test]
fn a_field_that_needs_another_is_refused_at_it() {
    for (rule, key, says) in [
        ("when: { nth: 2 }", "nth", "`when.nth` needs `match.type`"),
        (
            "when: { after_ack: v1 }",
            "after_ack",
            "`when.after_ack` needs `match.type`",
        ),
    ] {
        let text = format!("{FIRST}  - id: bad\n    {rule}\n    do: {{ drop: {{}} }}\n");
        refused_on(&text, key, &format!("rules[1] (bad): {says}"));
    }
    let text = format!("{FIRST}  - id: bad\n    do:\n      withhold: {{ names: [web] }}\n");
    refused_on(
        &text,
        "withhold",
        "rules[1] (bad): `withhold` needs `match.type`",
    );
    let text = format!(
        "{FIRST}  - id: bad\n    match: {{ type: cds }}\n    when: {{ nth: 2 }}\n    do: {{ withhold: {{ names: [web] }} }}\n"
    );
    refused_on(
        &text,
        "nth",
        "rules[1] (bad): `withhold` is not about one response",
    );
    let text = format!(
        "{FIRST}  - id: bad\n    match: {{ type: eds }}\n    do: {{ flap: {{ names: [web], period: 2s }} }}\n"
    );
    refused_on(
        &text,
        "eds",
        "rules[1] (bad): `flap` of eds needs `match.variant: delta`",
    );
    let text = format!(
        "{FIRST}  - id: bad\n    match: {{ service: rest }}\n    do: {{ stale_nonce: {{}} }}\n"
    );
    refused_on(
        &text,
        "rest",
        "rules[1] (bad): `stale_nonce` is not supported with `service: rest`",
    );
    let text = format!(
        "{FIRST}  - id: bad\n    match: {{ service: rest, type: cds }}\n    when: {{ after_ack: v1 }}\n    do: {{ delay: 1s }}\n"
    );
    refused_on(
        &text,
        "after_ack",
        "rules[1] (bad): `when.after_ack` is not supported with `service: rest`",
    );
}

/// What the YAML reader itself refuses is placed by it, and named like the rest.
#[test]
fn a_shape_error_names_the_rule_by_its_id() {
    let text = format!("{FIRST}  - id: slow\n    wen: {{ nth: 2 }}\n    do: {{ drop: {{}} }}\n");
    refused_on(&text, "wen", "rules[1] (slow): unknown field `wen`");
    let text = format!("{FIRST}  - do: {{ drop: {{}} }}\n    wen: {{ nth: 2 }}\n");
    refused_on(&text, "wen", "rules[1]: unknown field `wen`");
    let text =
        format!("{FIRST}  - id: slow\n    when: {{ nth: many }}\n    do: {{ drop: {{}} }}\n");
    refused_on(&text, "many", "rules[1] (slow): when.nth: invalid type");
    let text = format!(
        "{FIRST}  - id: cut\n    when:\n      requested: {{ type: cds, nme: web }}\n    do: {{ outage: {{ for: 1s }} }}\n"
    );
    refused_on(
        &text,
        "nme",
        "rules[1] (cut): when.requested: unknown field `nme`",
    );
}

/// Inside `do`, the action's name and its fields are placed like any other key and value.
#[test]
fn an_error_inside_the_action_is_placed_inside_it() {
    let text = format!("{FIRST}  - id: boom\n    do: {{ explode: {{}} }}\n");
    refused_on(
        &text,
        "explode",
        "rules[1] (boom): do: unknown variant `explode`",
    );
    let text =
        format!("{FIRST}  - id: shut\n    do:\n      close: {{ code: UNAVAILABLE, bogus: 1 }}\n");
    refused_on(
        &text,
        "bogus",
        "rules[1] (shut): do.close: unknown field `bogus`",
    );
    // Which of two actions is the wrong one nobody can say: the map holding them is.
    let text = format!("{FIRST}  - id: both\n    do: {{ delay: 2s, drop: {{}} }}\n");
    refused_on(
        &text,
        "{ delay",
        "rules[1] (both): do: 2 actions given (delay, drop)",
    );
    let text = format!("{FIRST}  - id: none\n    do: {{}}\n");
    refused_on(&text, "{}\n", "rules[1] (none): do: no action given");
}

#[test]
fn a_duplicate_id_is_refused_at_its_second_use() {
    let text = format!(
        "{FIRST}  - id: a\n    do: {{ drop: {{}} }}\n  - id: a  \n    do: {{ drop: {{}} }}\n"
    );
    refused_on(&text, "a  \n", "rules[2] (a): the id \"a\" is used twice");
}

/// A default id (`rule-<n>`) is not written in the file: a clash with one says whose it is.
#[test]
fn a_clash_with_a_default_id_says_whose_it_is() {
    let text = "version: 1\nrules:\n  - do: { drop: {} }\n  - id: rule-1\n    do: { drop: {} }\n";
    refused_on(
        text,
        "rule-1",
        "rules[1] (rule-1): the id \"rule-1\" is the default id of rules[0]: pick another",
    );
    let text =
        "version: 1\nrules:\n  - id: rule-2\n    do: { drop: {} }\n  - do: { reorder: {} }\n";
    refused_on(
        text,
        "do: { reorder",
        "rules[1]: its default id \"rule-2\" is the id of rules[0]: give it another",
    );
}
