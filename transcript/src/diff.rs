//! Two transcripts compared after [normalisation](crate::normalize), sequence by sequence: by
//! default one sequence per node, stream and type (the order of types on one stream depends on
//! the client's timing), with `--strict-order` one per stream.
//!
//! A difference is listed as `-` (only in A) and `+` (only in B) printed lines, each with its
//! `FILE:LINE`, and two lines of context. Under a `+` line, `≠` lines name the paths where it
//! differs from its `-` line (the same kind of line about the same type) and both values:
//! every path when the two print the same, the resource bodies' paths otherwise (`print` never
//! shows a body). A transcript with a `gap` never matches: events are
//! missing from it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::{
    line::{Side, What},
    normalize::{Group, Ignore, Normalised, normalise},
    print,
    read::Transcript,
};

/// Equal lines shown around a difference.
const CONTEXT: usize = 2;
/// Differing paths named under a pair of lines that print the same; the rest are counted.
const MAX_PATHS: usize = 4;
/// A value quoted in a `≠` line is cut to this many characters.
const MAX_VALUE: usize = 60;
/// Above this many cells (lines of A × lines of B in the differing middle of a sequence) the
/// listing shows the middle as removed then added, rather than spend memory on aligning it.
const MAX_CELLS: usize = 4_000_000;

/// How to compare: `transcript diff`'s flags.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Fields dropped before comparing, on top of [`crate::normalize::ALWAYS_IGNORED`].
    pub ignore: Ignore,
    /// Compare each stream as one sequence, so the order between types counts too.
    pub strict_order: bool,
}

/// The outcome, and what to show a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Whether B matches A: no differing sequence and no gap in either.
    pub same: bool,
    /// A one-line summary when the same; otherwise the `-`/`+` listing, or why the two
    /// cannot be compared (a gap, different sides).
    pub report: String,
}

/// Compares `b` (a new run) with `a` (the expected one), after normalising both.
pub fn diff(a: &Transcript, b: &Transcript, options: &Options) -> Comparison {
    let gaps = incomplete(a) + &incomplete(b);
    if !gaps.is_empty() {
        return different(gaps);
    }
    if a.header.side != b.header.side {
        let side = |s: Side| {
            if s == Side::Server {
                "server"
            } else {
                "client"
            }
        };
        return different(format!(
            "{} is a {} transcript and {} a {} one: they cannot match\n",
            a.file,
            side(a.header.side),
            b.file,
            side(b.header.side)
        ));
    }
    let (left, right) = (sequences(a, options), sequences(b, options));
    let groups: BTreeSet<&Group> = left.keys().chain(right.keys()).collect();
    let mut report = format!("--- {}\n+++ {}\n", a.file, b.file);
    let mut differing = 0;
    for group in &groups {
        let (x, y) = (seq(&left, group), seq(&right, group));
        if values(x) == values(y) {
            continue;
        }
        differing += 1;
        listing(&mut report, group, (a, x), (b, y));
    }
    let mode = if options.strict_order {
        "per node and stream (--strict-order)"
    } else {
        "per node, stream and type"
    };
    if differing == 0 {
        let lines: usize = left.values().map(Vec::len).sum();
        return Comparison {
            same: true,
            report: format!(
                "same: {lines} lines in {} sequences, compared {mode}\n",
                groups.len()
            ),
        };
    }
    let _ = writeln!(
        report,
        "different: {differing} of {} sequences, compared {mode}",
        groups.len()
    );
    different(report)
}

fn different(report: String) -> Comparison {
    Comparison {
        same: false,
        report,
    }
}

/// One line per `gap`: a transcript that lost events cannot be a golden file, nor be checked
/// against one.
fn incomplete(t: &Transcript) -> String {
    let mut out = String::new();
    for n in &t.events {
        if let What::Gap(gap) = &n.event.what {
            let _ = writeln!(
                out,
                "{}: incomplete transcript: {} events were lost while recording",
                t.location(n.line),
                gap.lost
            );
        }
    }
    out
}

fn sequences(t: &Transcript, options: &Options) -> BTreeMap<Group, Vec<Normalised>> {
    let mut groups: BTreeMap<Group, Vec<Normalised>> = BTreeMap::new();
    for n in normalise(t, &options.ignore, options.strict_order) {
        groups.entry(n.group.clone()).or_default().push(n);
    }
    groups
}

fn seq<'a>(groups: &'a BTreeMap<Group, Vec<Normalised>>, group: &Group) -> &'a [Normalised] {
    groups.get(group).map_or(&[], Vec::as_slice)
}

fn values(lines: &[Normalised]) -> Vec<&Value> {
    lines.iter().map(|n| &n.value).collect()
}

/// How one line of A relates to B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same(usize),
    Removed(usize),
    Added(usize),
}

/// The `@@ group @@` block: changed lines and [`CONTEXT`] lines around them, `…` for the rest.
fn listing(
    out: &mut String,
    group: &Group,
    a: (&Transcript, &[Normalised]),
    b: (&Transcript, &[Normalised]),
) {
    let ops = edit_script(&values(a.1), &values(b.1));
    let line = |op: Op| match op {
        Op::Same(i) => (' ', a.0.location(a.1[i].line), &a.1[i]),
        Op::Removed(i) => ('-', a.0.location(a.1[i].line), &a.1[i]),
        Op::Added(j) => ('+', b.0.location(b.1[j].line), &b.1[j]),
    };
    let rows: Vec<(char, String, &Normalised)> = ops.iter().map(|&op| line(op)).collect();
    let loc_width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let type_width = rows
        .iter()
        .map(|r| r.2.event.type_url().map_or(0, |t| t.label().len()))
        .max()
        .unwrap_or(0);
    let changed: Vec<bool> = ops.iter().map(|op| !matches!(op, Op::Same(_))).collect();
    let near_change = |k: usize| {
        let (lo, hi) = (k.saturating_sub(CONTEXT), (k + CONTEXT).min(ops.len() - 1));
        changed[lo..=hi].iter().any(|&c| c)
    };
    let _ = writeln!(out, "@@ {group} @@");
    let mut skipped = false;
    // The removed lines since the last equal one, with how they print: an added line that
    // prints the same as one of them differs only where `print` does not look.
    let mut removed: Vec<(String, &str, &Normalised)> = Vec::new();
    for (k, (sign, location, n)) in rows.iter().enumerate() {
        let body = print::body(&n.event, type_width);
        let same_print = match sign {
            ' ' => {
                removed.clear();
                None
            }
            '-' => {
                removed.push((body.clone(), location, n));
                None
            }
            _ => removed
                .iter()
                .position(|(b, ..)| *b == body)
                .or_else(|| removed.iter().position(|(.., r)| same_message(r, n)))
                .map(|i| removed.remove(i)),
        };
        if !near_change(k) {
            if !skipped {
                out.push_str("  …\n");
            }
            skipped = true;
            continue;
        }
        skipped = false;
        let _ = writeln!(
            out,
            "{}",
            format!("{sign} {location:<loc_width$}  {body}").trim_end()
        );
        if let Some((a_body, a_location, a_line)) = same_print {
            let mut paths = Vec::new();
            differences(&a_line.value, &n.value, String::new(), &mut paths);
            // Lines that print differently show their difference; a resource body, which
            // `print` never shows, is named all the same.
            if a_body != body {
                paths.retain(|(path, ..)| path.contains(".body"));
            }
            for (path, x, y) in paths.iter().take(MAX_PATHS) {
                let _ = writeln!(
                    out,
                    "  ≠ {path}: {} in {a_location}, {} in {location}",
                    quoted(*x),
                    quoted(*y)
                );
            }
            if paths.len() > MAX_PATHS {
                let _ = writeln!(out, "  ≠ … and {} more paths", paths.len() - MAX_PATHS);
            }
        }
    }
}

/// The same kind of line about the same type: a `-` and a `+` line worth comparing field by
/// field.
fn same_message(a: &Normalised, b: &Normalised) -> bool {
    a.event.kind() == b.event.kind() && a.event.type_url() == b.event.type_url()
}

/// A value (one side of a difference) in JSON, cut to [`MAX_VALUE`] characters.
fn quoted(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "absent".to_string();
    };
    let text = value.to_string();
    if text.chars().count() <= MAX_VALUE {
        return text;
    }
    let cut: String = text.chars().take(MAX_VALUE - 1).collect();
    cut + "…"
}

/// The leaf paths where `a` and `b` differ (`resources[0].body.connect_timeout`), in order,
/// with each side's value (`None`: absent on that side).
fn differences<'v>(
    a: &'v Value,
    b: &'v Value,
    path: String,
    out: &mut Vec<(String, Option<&'v Value>, Option<&'v Value>)>,
) {
    if a == b {
        return;
    }
    let key = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => differences(v, w, key(k), out),
                    None => out.push((key(k), Some(v), None)),
                }
            }
            for (k, w) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                out.push((key(k), None, Some(w)));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let at = format!("{path}[{i}]");
                match (x.get(i), y.get(i)) {
                    (Some(v), Some(w)) => differences(v, w, at, out),
                    (v, w) => out.push((at, v, w)),
                }
            }
        }
        _ => out.push((path, Some(a), Some(b))),
    }
}

/// A shortest edit script from `a` to `b`: the common prefix and suffix, and a longest common
/// subsequence alignment of the middle.
fn edit_script(a: &[&Value], b: &[&Value]) -> Vec<Op> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut ops: Vec<Op> = (0..prefix).map(Op::Same).collect();
    ops.extend(middle(am, bm).into_iter().map(|op| match op {
        Op::Same(i) => Op::Same(prefix + i),
        Op::Removed(i) => Op::Removed(prefix + i),
        Op::Added(j) => Op::Added(prefix + j),
    }));
    ops.extend((a.len() - suffix..a.len()).map(Op::Same));
    ops
}

fn middle(a: &[&Value], b: &[&Value]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    if n * m > MAX_CELLS {
        return (0..n)
            .map(Op::Removed)
            .chain((0..m).map(Op::Added))
            .collect();
    }
    // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut ops) = (0, 0, Vec::with_capacity(n + m));
    while i < n && j < m {
        if a[i] == b[j] {
            ops.push(Op::Same(i));
            (i, j) = (i + 1, j + 1);
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            ops.push(Op::Removed(i));
            i += 1;
        } else {
            ops.push(Op::Added(j));
            j += 1;
        }
    }
    ops.extend((i..n).map(Op::Removed));
    ops.extend((j..m).map(Op::Added));
    ops
}

#[cfg(test)]
mod tests;
