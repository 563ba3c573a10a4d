//! The status document as a terminal table (`xdsloop-server status`): a header with the
//! snapshot and the last reload, then one row per stream and type, grouped by node, with the
//! NACK reason in full. Pure: document and "now" in, text out.

use std::{fmt::Write as _, time::SystemTime};

use super::{NackView, StatusDocument, StreamView, SyncState, TypeSummary, TypeView, rfc3339};

/// Renders `doc`; ages ("3s ago") are relative to `now`.
pub fn render(doc: &StatusDocument, now: SystemTime) -> String {
    let mut out = String::new();
    header(&mut out, doc);
    let mut open: Vec<&StreamView> = doc.streams.iter().collect();
    open.sort_by(|a, b| (&a.node_id, a.id).cmp(&(&b.node_id, b.id)));
    if open.is_empty() {
        out.push_str("\nno open streams\n");
    } else {
        out.push('\n');
        out.push_str(&table(&open, now, false));
        out.push_str(&violations(&open));
    }
    if !doc.recently_closed.is_empty() {
        let closed: Vec<&StreamView> = doc.recently_closed.iter().collect();
        out.push_str("\nrecently closed (most recent first)\n");
        out.push_str(&table(&closed, now, true));
        out.push_str(&violations(&closed));
    }
    out
}

fn header(out: &mut String, doc: &StatusDocument) {
    let snapshot = &doc.snapshot;
    let _ = writeln!(
        out,
        "snapshot  generation {} · {} resources{}",
        snapshot.generation,
        snapshot.resources,
        types_line(&snapshot.types)
    );
    for overlay in &snapshot.overlays {
        let _ = writeln!(
            out,
            "overlay   node {}{}",
            overlay.node_id,
            types_line(&overlay.types)
        );
    }
    let reload = &doc.reload;
    let at = rfc3339::format(reload.at);
    if reload.ok {
        let _ = writeln!(out, "reload    OK at {at}");
    } else {
        let file = reload.file.as_deref().unwrap_or("(fixture directory)");
        let _ = writeln!(
            out,
            "reload    REJECTED at {at}: {file} (still serving generation {})",
            reload.generation
        );
        if let Some(error) = &reload.error {
            let _ = writeln!(out, "          {}", one_line(error));
        }
    }
    if let Some(running) = &reload.in_progress {
        let since = rfc3339::format(running.since);
        let files = match running.files.as_slice() {
            [] => "reading the fixture directory".to_string(),
            [one] => format!("decoding {one}"),
            [first, rest @ ..] => format!("decoding {first} and {} more", rest.len()),
        };
        let _ = writeln!(out, "reload    RUNNING since {since}: {files}");
    }
    let watcher = &reload.watcher;
    if !watcher.ok {
        let since = watcher.since.map(rfc3339::format).unwrap_or_default();
        let error = one_line(watcher.error.as_deref().unwrap_or("no reason given"));
        let _ = writeln!(
            out,
            "watcher   DOWN since {since}: {error} (edits are not picked up; restarting it)"
        );
    }
    scenario_line(out, doc);
    if let Some(replay) = &doc.replay {
        let _ = writeln!(
            out,
            "replay    {} · {} of {} recorded streams taken · {} of {} requests as recorded · {} strayed",
            replay.file,
            replay.bound,
            replay.streams,
            replay.matched,
            replay.requests,
            replay.failures
        );
        if let Some(error) = &replay.error {
            let _ = writeln!(out, "          first: {}", one_line(&error.message));
        }
    }
    let t = &doc.totals;
    let _ = writeln!(
        out,
        "streams   {} open · {} SYNCED · {} PENDING · {} NACKED · {} STALE",
        t.open_streams, t.synced, t.pending, t.nacked, t.stale
    );
}

/// The fault scenario, when one is in force or was refused.
fn scenario_line(out: &mut String, doc: &StatusDocument) {
    let Some(scenario) = &doc.scenario else {
        return;
    };
    if !scenario.rules.is_empty() {
        let from = scenario.path.as_deref().unwrap_or(&scenario.source);
        let fired: u64 = scenario.rules.iter().map(|r| r.fired).sum();
        let skipped: u64 = scenario.rules.iter().map(|r| r.skipped).sum();
        let skipped_total = match skipped {
            0 => String::new(),
            n => format!(", {n} skipped"),
        };
        let rules = scenario.rules.iter().map(|r| match r.skipped {
            0 => format!("{} {}", r.id, r.fired),
            n => format!("{} {} ({n} skipped)", r.id, r.fired),
        });
        let rules: Vec<String> = rules.collect();
        let _ = writeln!(
            out,
            "scenario  {from} · {} rules · {fired} fired{skipped_total} ({})",
            scenario.rules.len(),
            rules.join(", ")
        );
    }
    if let Some(error) = &scenario.error {
        let _ = writeln!(out, "scenario  REFUSED: {}", one_line(error));
    }
    if let Some(outage) = &scenario.outage {
        let length = humantime::format_duration(super::scenario::outage_length(outage));
        let (state, until) = match (outage.active, &outage.rebind_error) {
            (true, Some(error)) => (
                "OUTAGE",
                format!(
                    "over, but the xDS listener cannot be bound again ({error}); it was to last until"
                ),
            ),
            (true, None) => ("OUTAGE", "refusing connections until".to_string()),
            (false, _) => ("outage", "over; it was to last until".to_string()),
        };
        let earlier = match outage.generation == scenario.generation {
            true => "",
            false => ", a rule of an earlier installation",
        };
        let _ = writeln!(
            out,
            "{state}    {} for {length} ({}{earlier}): {until} {}",
            outage.rule,
            outage.trigger,
            rfc3339::format(outage.ends_at)
        );
    }
}

fn types_line(types: &[TypeSummary]) -> String {
    let parts = types.iter().map(|t| {
        let version = short(&t.version);
        format!(" · {} {version} ({})", t.alias, t.resources)
    });
    parts.collect()
}

fn table(streams: &[&StreamView], now: SystemTime, closed: bool) -> String {
    // Only a table with a row a scenario rule touched has the FAULT column.
    let faults = streams
        .iter()
        .any(|s| s.types.iter().any(|t| t.last_fault.is_some()));
    let mut head = vec!["NODE", "STREAM", "TRANSPORT", "PEER", "VIOL"];
    if closed {
        head.push("CLOSED");
    }
    head.extend(["TYPE", "STATE", "SUBSCRIBED", "SERVING", "SENT", "ACKED"]);
    if faults {
        head.push("FAULT");
    }
    head.push("DETAIL");
    let mut rows = vec![head.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    for stream in streams {
        let mut lead = vec![
            stream.node_id.clone().unwrap_or_else(|| "-".into()),
            stream.id.to_string(),
            stream.transport.clone(),
            stream.peer.clone().unwrap_or_else(|| "-".into()),
            stream.violations.count.to_string(),
        ];
        if closed {
            lead.push(stream.disconnected_at.map_or("-".into(), |at| age(now, at)));
        }
        if stream.types.is_empty() {
            let mut row = lead.clone();
            row.extend(["-", "-", "-", "-", "-", "-"].map(String::from));
            if faults {
                row.push("-".into());
            }
            row.push("no request yet".into());
            rows.push(row);
        }
        for t in &stream.types {
            let mut row = lead.clone();
            let [cells @ .., detail] = type_cells(t, now);
            row.extend(cells);
            if faults {
                row.push(t.last_fault.as_ref().map_or("-".into(), |f| f.rule.clone()));
            }
            row.push(detail);
            rows.push(row);
        }
    }
    align(&rows)
}

/// Each stream's last conformance violations, with the judge's evidence.
fn violations(streams: &[&StreamView]) -> String {
    let mut out = String::new();
    for stream in streams.iter().filter(|s| s.violations.count > 0) {
        let v = &stream.violations;
        let node = stream.node_id.as_deref().unwrap_or("-");
        let _ = writeln!(
            out,
            "violations on stream {} (node {node}): {} (last {} shown)",
            stream.id,
            v.count,
            v.last.len()
        );
        for violation in &v.last {
            let _ = writeln!(
                out,
                "  {}: {}",
                violation.check,
                one_line(&violation.message)
            );
        }
    }
    out
}

fn type_cells(t: &TypeView, now: SystemTime) -> [String; 7] {
    let sent = t.last_sent.as_ref().map_or("-".into(), |s| {
        format!("{} #{}", short(&s.version), s.nonce)
    });
    let acked = t
        .last_acked
        .as_ref()
        .map_or("-".into(), |a| short(&a.version));
    [
        t.alias.clone(),
        t.state.as_str().to_string(),
        subscribed(t),
        short(&t.snapshot_version),
        sent,
        acked,
        detail(t, now),
    ]
}

fn subscribed(t: &TypeView) -> String {
    const SHOWN: usize = 3;
    let mut parts: Vec<String> = Vec::new();
    if t.wildcard {
        parts.push("*".into());
    }
    parts.extend(t.names.iter().take(SHOWN).cloned());
    if t.names.len() > SHOWN {
        parts.push(format!("+{}", t.names.len() - SHOWN));
    }
    if parts.is_empty() {
        return "(none)".into();
    }
    parts.join(",")
}

/// The state's detail, then what a `withhold` rule left out of the latest response.
fn detail(t: &TypeView, now: SystemTime) -> String {
    let state = state_detail(t, now);
    let Some(w) = &t.withheld else {
        return state;
    };
    let waited = now.duration_since(w.waiting_since).unwrap_or_default();
    let waited = humantime::format_duration(std::time::Duration::from_secs(waited.as_secs()));
    let withheld = format!(
        "withheld {} by {}, client waiting {waited}",
        w.names.join(","),
        w.rule
    );
    match state.is_empty() {
        true => withheld,
        false => format!("{state}; {withheld}"),
    }
}

fn state_detail(t: &TypeView, now: SystemTime) -> String {
    match t.state {
        SyncState::Nacked => t
            .last_nack
            .as_ref()
            .map(|n| nack(n, now))
            .unwrap_or_default(),
        SyncState::Pending => match &t.last_sent {
            Some(sent) if sent.held.is_some() => held(sent, now),
            Some(sent) if sent.fault.as_ref().is_some_and(|f| f.action == "drop") => {
                let rule = sent.fault.as_ref().map_or("", |f| f.rule.as_str());
                format!(
                    "dropped by {rule} {}: the client never got it",
                    age(now, sent.at)
                )
            }
            Some(sent) => format!("sent {}, no answer yet", age(now, sent.at)),
            None => "nothing sent yet".into(),
        },
        SyncState::Stale => stale(t, now),
        SyncState::Synced => match &t.last_acked {
            Some(acked) => format!("ACKed {}", age(now, acked.at)),
            None => String::new(),
        },
    }
}

/// Why a row is behind: how the latest response sent was answered, if it was.
fn stale(t: &TypeView, now: SystemTime) -> String {
    let Some(sent) = &t.last_sent else {
        return "nothing sent yet".into();
    };
    let acked = t.last_acked.as_ref().filter(|a| a.nonce == sent.nonce);
    let nacked = t.last_nack.as_ref().filter(|n| n.nonce == sent.nonce);
    match (acked, nacked) {
        // Both answered it (a client that changed its mind): the later counts.
        (Some(a), Some(n)) if n.at > a.at => nack(n, now),
        (None, Some(n)) => nack(n, now),
        (Some(_), _) => "snapshot changed; push not acknowledged".into(),
        // Not even the latest response was answered (an older NACK is history): the client
        // is not reading.
        (None, None) => format!(
            "sent {}, no answer; the snapshot moved on",
            age(now, sent.at)
        ),
    }
}

fn nack(nack: &NackView, now: SystemTime) -> String {
    let message = one_line(&nack.message);
    let when = age(now, nack.at);
    format!("NACK of {} {when}: {message}", short(&nack.version))
}

/// Content-hash versions are 16 hex digits; 8 tell them apart on a screen.
fn short(version: &str) -> String {
    let is_hash = version.len() == 16 && version.bytes().all(|b| b.is_ascii_hexdigit());
    if is_hash {
        version[..8].to_string()
    } else {
        version.to_string()
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A response a `delay` holds back: not sent, so nothing to answer yet; or never sent, when
/// its stream ended first.
fn held(sent: &super::SentView, now: SystemTime) -> String {
    let rule = sent.fault.as_ref().map_or("", |f| f.rule.as_str());
    if sent.held.as_ref().is_some_and(|h| h.never_sent) {
        return format!("held by {rule} (delay), never sent (stream closed)");
    }
    let until = sent.held.as_ref().map_or(now, |h| h.until);
    let left = until.duration_since(now).unwrap_or_default();
    format!(
        "held by {rule} (delay), goes out in {:.1}s",
        left.as_secs_f64()
    )
}

fn age(now: SystemTime, at: SystemTime) -> String {
    let secs = now.duration_since(at).map_or(0, |d| d.as_secs());
    match secs {
        0 => "just now".into(),
        1..=59 => format!("{secs}s ago"),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// Left-aligned columns two spaces apart; the last column is not padded.
fn align(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths[c] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
