//! One Delta reconciliation: what the client holds (`known`) against the snapshot, and what
//! it must be told (S8, S9, S10, S16).

use std::{collections::BTreeSet, sync::Arc};

use bytes::Bytes;
use xdsloop_proto::Resource;

use super::TypeState;
use crate::{
    snapshot::TypeResources,
    snapshot::{diff::Diff, joined::Sent},
};

/// What one reconciliation found to send.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// Encoded `resources` entries, shared with other streams sending the same resources.
    pub(super) resources: Vec<Bytes>,
    /// The resources of those entries, in the same order (shared like the entries).
    pub(super) sent: Sent,
    pub(super) removed: BTreeSet<String>,
}

/// Brings `state.known` in line with `resources` and returns what the client must be told.
/// Names in `force` are answered even if the client already holds them at this version.
pub(super) fn reconcile(
    url: &str,
    state: &mut TypeState,
    resources: &Arc<TypeResources>,
    force: &BTreeSet<&str>,
) -> Changes {
    // A client holding exactly its share of the generation it last saw, under the same
    // interest, with no name forced: only the names that changed since need a look.
    let diff = match force.is_empty() {
        true => state.known.diff_to(resources, &state.sub.interest),
        false => None,
    };
    let sent = send_changed(state, resources, force, diff.as_deref());
    let (entries, sent) = resources.delta_sent(url, sent);
    let_expire(state, resources);
    let removed = removals(state, resources, force, diff.as_deref());
    state.known.rebase(resources, &state.sub.interest);
    state.seen_hash = Some(resources.content_hash);
    Changes {
        resources: entries,
        sent,
        removed,
    }
}

/// The wanted resources the client does not hold at their current version (or that it named
/// again), recorded as held.
fn send_changed(
    state: &mut TypeState,
    resources: &TypeResources,
    force: &BTreeSet<&str>,
    diff: Option<&Diff>,
) -> Vec<Arc<Resource>> {
    let interest = &state.sub.interest;
    let present: Vec<&Arc<Resource>> = match diff {
        Some(diff) => {
            let changed = diff.upserted.iter();
            changed.filter(|r| interest.contains(&r.name)).collect()
        }
        None if interest.is_wildcard() => resources.resources.values().collect(),
        None => {
            let names = interest.names().iter();
            names.filter_map(|n| resources.resources.get(n)).collect()
        }
    };
    let mut send = Vec::new();
    for r in present {
        let held = state.known.get(&r.name).flatten();
        if held != Some(r.version.as_str()) || force.contains(r.name.as_str()) {
            send.push(r.clone());
            state.known.insert(&r.name, Some(&r.version));
            match r.ttl {
                Some(_) => state.ttl_names.insert(r.name.clone()),
                None => state.ttl_names.remove(&r.name),
            };
        }
    }
    send
}

/// Held resources that are gone, and subscribed names that do not exist and were not reported
/// yet; each reported once.
fn removals(
    state: &mut TypeState,
    resources: &TypeResources,
    force: &BTreeSet<&str>,
    diff: Option<&Diff>,
) -> BTreeSet<String> {
    let interest = &state.sub.interest;
    let held = |name: &str| matches!(state.known.get(name), Some(Some(_)));
    let removed = match diff {
        // Every subscribed name is known already (held, or reported absent).
        Some(diff) => diff.removed.iter().filter(|n| held(n)).cloned().collect(),
        None => {
            let mut removed = BTreeSet::new();
            for (name, held) in state.known.iter() {
                if held.is_some() && !resources.resources.contains_key(name) {
                    removed.insert(name.to_string());
                }
            }
            for name in interest.names() {
                let reported = state.known.contains(name) && !force.contains(name.as_str());
                if !resources.resources.contains_key(name) && !reported {
                    removed.insert(name.clone());
                }
            }
            removed
        }
    };
    for name in &removed {
        if interest.names_contain(name) {
            // Remember the report so it is not repeated on every change.
            state.known.insert(name, None);
        } else {
            // Only the wildcard covered it: nothing left to remember.
            state.known.remove(name);
        }
    }
    removed
}

/// S16: a TTL'd resource that is gone expires on the client; it is not removed. The stream
/// forgets it (or, for a name still subscribed, remembers that there is nothing to send).
fn let_expire(state: &mut TypeState, resources: &TypeResources) {
    let interest = &state.sub.interest;
    let expiring: Vec<String> = state
        .ttl_names
        .iter()
        .filter(|n| !resources.resources.contains_key(*n))
        .cloned()
        .collect();
    for name in expiring {
        state.ttl_names.remove(&name);
        match interest.names_contain(&name) {
            true => state.known.insert(&name, None),
            false => state.known.remove(&name),
        }
    }
}
