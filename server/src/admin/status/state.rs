//! Where a client stands on one type: `SYNCED`, `PENDING`, `NACKED` or `STALE`.
//!
//! Decided from the stream's ledger (which response was answered, and how) and from what the
//! current snapshot would serve that stream now. A SotW response is current when it carried the
//! node's version of the type *and* the resources the subscription would get now (by content
//! hash): an explicit `version_info` may be bumped while the content stays, or stay while the
//! content changes. Delta resources carry content-hash versions of their own, so a Delta stream
//! is current when it holds exactly the resources it would get now, at their versions;
//! `system_version_info` is informational there.

use serde::{Deserialize, Serialize};
use xdsloop_proto::version;

use crate::{
    admin::registry::Variant, protocol::subscription::TypeStatus, snapshot::TypeResources,
};

/// One stream's standing on one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SyncState {
    /// The client ACKed the response the snapshot would serve it now.
    Synced,
    /// The response the snapshot would serve it now was sent and is not answered yet (or the
    /// first response is not sent yet).
    Pending,
    /// The client rejected the response the snapshot would serve it now; it is not resent
    /// until the fixtures change.
    Nacked,
    /// The latest response sent is older than the snapshot: the push is about to go out, or
    /// the stream cannot take it (a client that stopped reading), whether or not the older
    /// response was answered.
    Stale,
}

impl SyncState {
    /// The state as `/status` writes it: `SYNCED`, `PENDING`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            SyncState::Synced => "SYNCED",
            SyncState::Pending => "PENDING",
            SyncState::Nacked => "NACKED",
            SyncState::Stale => "STALE",
        }
    }
}

/// How the latest response on a type was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    None,
    Ack,
    Nack,
}

/// How `status`'s latest response was answered.
pub(crate) fn answer(status: &TypeStatus) -> Answer {
    let Some(sent) = &status.last_sent else {
        return Answer::None;
    };
    let acked = status.last_acked.as_ref().filter(|a| a.nonce == sent.nonce);
    let nacked = status.last_nack.as_ref().filter(|n| n.nonce == sent.nonce);
    match (acked, nacked) {
        (None, None) => Answer::None,
        (Some(_), None) => Answer::Ack,
        (None, Some(_)) => Answer::Nack,
        // Both answered the same response (a client that changed its mind): the later counts.
        (Some(a), Some(n)) if a.at >= n.at => Answer::Ack,
        (Some(_), Some(_)) => Answer::Nack,
    }
}

/// The state of `status`, on a stream of `variant`, given `current`: what the snapshot serves
/// this node for this type (`None`: the type has no fixtures, served as empty).
pub fn sync_state(
    status: &TypeStatus,
    current: Option<&TypeResources>,
    variant: Variant,
) -> SyncState {
    sync_state_with(status, current, variant, || {
        view_hash(status, current, variant)
    })
}

/// [`sync_state`], with the [`view_hash`] computed by `hash` (only if needed), so a caller
/// that judges many streams with the same subscription computes it once.
pub(crate) fn sync_state_with(
    status: &TypeStatus,
    current: Option<&TypeResources>,
    variant: Variant,
    hash: impl FnOnce() -> u64,
) -> SyncState {
    let Some(sent) = &status.last_sent else {
        return SyncState::Pending;
    };
    if status.replayed {
        // The recording is what is served: the latest response is the current one.
        return match answer(status) {
            Answer::None => SyncState::Pending,
            Answer::Ack => SyncState::Synced,
            Answer::Nack => SyncState::Nacked,
        };
    }
    let same_content = status.held_hash == Some(hash());
    // A response made for another type and sent under this one's URL (`wrong_type_url: {in:
    // response}`) carries that type's version: what the client holds of this type is what it
    // held, which the content says.
    let foreign = sent
        .fault
        .as_ref()
        .is_some_and(|f| f.action == "wrong_type_url");
    let same_version = foreign
        || match variant {
            // A stream that asks for nothing of the type is never pushed it again (an empty
            // named interest is not a wildcard), so the type's version moving does not leave
            // it behind: what it holds (nothing) is what it would get.
            Variant::Sotw if !status.wildcard && status.names.is_empty() => true,
            // Named resources are pushed only when they change (their stamp, compared as the
            // content is, covers their own version_infos), not when the type's version moves.
            Variant::Sotw if !status.wildcard => true,
            Variant::Sotw => match current {
                Some(resources) => sent.version == resources.version,
                None => sent.version == served_version(None),
            },
            Variant::Delta => true,
        };
    if !(same_content && same_version) {
        return SyncState::Stale;
    }
    match answer(status) {
        Answer::None => SyncState::Pending,
        Answer::Ack => SyncState::Synced,
        Answer::Nack => SyncState::Nacked,
    }
}

/// The SotW `version_info` the snapshot would send this node now.
pub(crate) fn served_version(current: Option<&TypeResources>) -> String {
    match current {
        Some(resources) => resources.version.clone(),
        // A type without fixtures is served empty, versioned like any empty set.
        None => version::short(version::fnv1a(&[])),
    }
}

/// Hash of the resources `status`'s subscription receives from `resources`: all of them for a
/// wildcard, else the named ones that exist. Same formula as `TypeResources::content_hash`
/// (name and version of each resource, by name), which the stream machines also use.
pub(crate) fn view_hash(
    status: &TypeStatus,
    resources: Option<&TypeResources>,
    variant: Variant,
) -> u64 {
    let Some(resources) = resources else {
        return version::fnv1a(&[]);
    };
    if status.wildcard {
        return resources.content_hash;
    }
    if variant == Variant::Sotw {
        // What the SotW machine keeps for named resources (see its `held_key`).
        return resources.named_stamp(status.names.iter().map(String::as_str));
    }
    let mut names: Vec<&str> = status.names.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let parts: Vec<&[u8]> = names
        .iter()
        .filter_map(|n| resources.resources.get(*n))
        .flat_map(|r| [r.name.as_bytes(), r.version.as_bytes()])
        .collect();
    version::fnv1a(&parts)
}

#[cfg(test)]
mod tests {
    use std::{collections::BTreeMap, sync::Arc, time::SystemTime};

    use bytes::Bytes;
    use xdsloop_proto::{Resource, type_url};

    use super::*;
    use crate::protocol::subscription::{Acked, Nacked, Sent};

    fn sotw_state(status: &TypeStatus, current: &TypeResources) -> SyncState {
        sync_state(status, Some(current), Variant::Sotw)
    }

    fn resources(items: &[(&str, &str)]) -> TypeResources {
        versioned(items, "v1")
    }

    fn versioned(items: &[(&str, &str)], version: &str) -> TypeResources {
        let map: BTreeMap<String, Arc<Resource>> = items
            .iter()
            .map(|(name, v)| {
                let r = Resource {
                    type_url: type_url::CLUSTER.into(),
                    name: name.to_string(),
                    bytes: Bytes::new(),
                    version: v.to_string(),
                    ttl: None,
                };
                (name.to_string(), Arc::new(r))
            })
            .collect();
        TypeResources::new(map, Some(version.into()))
    }

    fn status(wildcard: bool, names: &[&str]) -> TypeStatus {
        TypeStatus {
            type_url: type_url::CLUSTER.into(),
            wildcard,
            names: names.iter().map(|s| s.to_string()).collect(),
            last_sent: None,
            last_acked: None,
            last_nack: None,
            last_fault: None,
            held_hash: None,
            heartbeats: None,
            replayed: false,
        }
    }

    fn sent(status: &mut TypeStatus, nonce: &str, of: &TypeResources) {
        status.last_sent = Some(Sent {
            version: of.version.clone(),
            nonce: nonce.into(),
            resources: of.resources.len(),
            at: SystemTime::now(),
            fault: None,
            withheld: None,
            held: None,
        });
        status.held_hash = Some(view_hash(status, Some(of), Variant::Sotw));
    }

    fn ack(status: &mut TypeStatus) {
        let sent = status.last_sent.clone().unwrap();
        let (version, nonce, at) = (sent.version, sent.nonce, SystemTime::now());
        status.last_acked = Some(Acked { version, nonce, at });
    }

    fn nack(status: &mut TypeStatus, message: &str) {
        let sent = status.last_sent.clone().unwrap();
        status.last_nack = Some(Nacked {
            version: sent.version,
            nonce: sent.nonce,
            message: message.into(),
            at: SystemTime::now(),
        });
    }

    #[test]
    fn view_hash_matches_the_content_hash_of_the_same_resources() {
        let all = resources(&[("a", "1"), ("b", "2"), ("c", "3")]);
        for variant in [Variant::Sotw, Variant::Delta] {
            let wildcard = view_hash(&status(true, &[]), Some(&all), variant);
            assert_eq!(wildcard, all.content_hash);
        }
        let named = status(false, &["c", "a", "missing"]);
        let picked = view_hash(&named, Some(&all), Variant::Delta);
        assert_eq!(picked, resources(&[("a", "1"), ("c", "3")]).content_hash);
        // SotW names: the stamp, which also covers the version_info standing for them.
        let stamped = view_hash(&named, Some(&all), Variant::Sotw);
        assert_eq!(stamped, all.named_stamp(["a", "c"]));
        assert_ne!(
            stamped,
            versioned(&[("a", "1"), ("b", "2"), ("c", "3")], "v2").named_stamp(["a", "c"])
        );
        let empty = TypeResources::new(BTreeMap::new(), None);
        assert_eq!(
            view_hash(&status(true, &[]), None, Variant::Sotw),
            empty.content_hash
        );
        assert_eq!(served_version(None), empty.version);
    }

    #[test]
    fn nothing_sent_or_unanswered_is_pending() {
        let v1 = resources(&[("a", "1")]);
        let mut s = status(true, &[]);
        assert_eq!(sotw_state(&s, &v1), SyncState::Pending);
        sent(&mut s, "1", &v1);
        assert_eq!(sotw_state(&s, &v1), SyncState::Pending);
        ack(&mut s);
        assert_eq!(sotw_state(&s, &v1), SyncState::Synced);
        let v2 = resources(&[("a", "2")]);
        sent(&mut s, "2", &v2);
        assert_eq!(
            sotw_state(&s, &v2),
            SyncState::Pending,
            "an older ACK does not answer the newer response"
        );
    }

    #[test]
    fn an_ack_of_older_content_is_stale_even_under_the_same_version_string() {
        let v1 = resources(&[("a", "1")]);
        let mut s = status(true, &[]);
        sent(&mut s, "1", &v1);
        ack(&mut s);
        let changed = resources(&[("a", "2")]);
        assert_eq!(changed.version, v1.version, "explicit version_info kept");
        assert_eq!(sotw_state(&s, &changed), SyncState::Stale);
    }

    #[test]
    fn status_synced_only_when_current_version_acked() {
        let v1 = versioned(&[("a", "1")], "v1");
        let mut s = status(true, &[]);
        sent(&mut s, "1", &v1);
        ack(&mut s);
        assert_eq!(sotw_state(&s, &v1), SyncState::Synced);
        let bumped = versioned(&[("a", "1")], "v2");
        assert_eq!(bumped.content_hash, v1.content_hash, "a version-only bump");
        assert_eq!(sotw_state(&s, &bumped), SyncState::Stale);
        sent(&mut s, "2", &bumped);
        assert_eq!(sotw_state(&s, &bumped), SyncState::Pending);
        ack(&mut s);
        assert_eq!(sotw_state(&s, &bumped), SyncState::Synced);
        // Delta resources carry content versions: the type's version is not what they hold.
        let delta = sync_state(&s, Some(&versioned(&[("a", "1")], "v3")), Variant::Delta);
        assert_eq!(delta, SyncState::Synced);
    }

    #[test]
    fn status_stale_when_an_unanswered_response_is_behind_the_snapshot() {
        let v1 = resources(&[("a", "1")]);
        let mut s = status(true, &[]);
        sent(&mut s, "1", &v1);
        assert_eq!(sotw_state(&s, &v1), SyncState::Pending);
        let v2 = resources(&[("a", "2")]);
        assert_eq!(
            sotw_state(&s, &v2),
            SyncState::Stale,
            "a client that stopped reading is not waited for: it cannot take the push"
        );
    }

    #[test]
    fn named_subscriptions_ignore_changes_to_other_resources_under_the_same_version() {
        let before = resources(&[("a", "1"), ("b", "1")]);
        let mut s = status(false, &["a"]);
        sent(&mut s, "1", &before);
        ack(&mut s);
        let after = resources(&[("a", "1"), ("b", "2")]);
        assert_eq!(sotw_state(&s, &after), SyncState::Synced);
    }

    #[test]
    fn status_unsubscribed_sotw_type_is_not_stale() {
        let v1 = resources(&[("a", "1")]);
        let mut s = status(false, &["a"]);
        sent(&mut s, "1", &v1);
        ack(&mut s);
        // The client drops its last name (`resource_names: []` after naming some): it now
        // holds nothing of the type, and nothing will be pushed to it.
        s.names = Default::default();
        s.held_hash = Some(view_hash(&s, Some(&v1), Variant::Sotw));
        assert_eq!(sotw_state(&s, &v1), SyncState::Synced);
        let changed = versioned(&[("a", "2")], "v2");
        assert_eq!(
            sotw_state(&s, &changed),
            SyncState::Synced,
            "no push is due to a stream that asks for nothing, so it is not behind"
        );
    }

    #[test]
    fn a_nack_of_the_current_content_is_nacked_until_the_content_moves_on() {
        let v2 = resources(&[("a", "2")]);
        let mut s = status(true, &[]);
        sent(&mut s, "2", &v2);
        nack(&mut s, "bad");
        assert_eq!(sotw_state(&s, &v2), SyncState::Nacked);
        let v3 = resources(&[("a", "3")]);
        assert_eq!(sotw_state(&s, &v3), SyncState::Stale);
        sent(&mut s, "3", &v3);
        ack(&mut s);
        assert_eq!(sotw_state(&s, &v3), SyncState::Synced);
    }

    #[test]
    fn states_serialize_in_capitals() {
        let json = serde_json::to_string(&SyncState::Nacked).unwrap();
        assert_eq!(json, "\"NACKED\"");
        assert_eq!(SyncState::Stale.as_str(), "STALE");
    }
}
