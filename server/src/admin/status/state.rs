//! Where a client stands on one type: `SYNCED`, `PENDING`, `NACKED` or `STALE`.
//!
//! Decided from the stream's ledger (which response was answered, and how) and from what the
//! current snapshot serves that node, compared by content hash: an explicit `version_info` may
//! stay the same while the content changes, and a named subscription is unaffected by changes
//! to resources it did not ask for.

use serde::{Deserialize, Serialize};
use xdsloop_proto::version;

use crate::{TypeResources, protocol::subscription::TypeStatus};

/// One stream's standing on one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SyncState {
    /// The client ACKed the content the snapshot currently serves it.
    Synced,
    /// The latest response is not answered yet (or the first one is not sent yet).
    Pending,
    /// The client rejected the content the snapshot currently serves it; it is not resent
    /// until the fixtures change.
    Nacked,
    /// The client's last answer is about older content than the snapshot now has (the push
    /// is on its way, or the stream is too slow to take it).
    Stale,
}

impl SyncState {
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
enum Answer {
    None,
    Ack,
    Nack,
}

fn answer(status: &TypeStatus) -> Answer {
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

/// The state of `status` given `current`: what the snapshot serves this node for this type
/// (`None`: the type has no fixtures, served as empty).
pub fn sync_state(status: &TypeStatus, current: Option<&TypeResources>) -> SyncState {
    let current_hash = view_hash(status, current);
    let is_current = status.held_hash == Some(current_hash);
    match answer(status) {
        Answer::None => SyncState::Pending,
        Answer::Ack if is_current => SyncState::Synced,
        Answer::Nack if is_current => SyncState::Nacked,
        Answer::Ack | Answer::Nack => SyncState::Stale,
    }
}

/// Hash of the resources `status`'s subscription receives from `resources`: all of them for a
/// wildcard, else the named ones that exist. Same formula as `TypeResources::content_hash`
/// (name and version of each resource, by name), which the stream machines also use.
pub fn view_hash(status: &TypeStatus, resources: Option<&TypeResources>) -> u64 {
    let Some(resources) = resources else {
        return version::fnv1a(&[]);
    };
    if status.wildcard {
        return resources.content_hash;
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

    fn resources(items: &[(&str, &str)]) -> TypeResources {
        let map: BTreeMap<String, Arc<Resource>> = items
            .iter()
            .map(|(name, v)| {
                let r = Resource {
                    type_url: type_url::CLUSTER.into(),
                    name: name.to_string(),
                    bytes: Bytes::new(),
                    version: v.to_string(),
                };
                (name.to_string(), Arc::new(r))
            })
            .collect();
        TypeResources::new(map, Some("v1".into()))
    }

    fn status(wildcard: bool, names: &[&str]) -> TypeStatus {
        TypeStatus {
            type_url: type_url::CLUSTER.into(),
            wildcard,
            names: names.iter().map(|s| s.to_string()).collect(),
            last_sent: None,
            last_acked: None,
            last_nack: None,
            held_hash: None,
        }
    }

    fn sent(status: &mut TypeStatus, nonce: &str, of: &TypeResources) {
        status.last_sent = Some(Sent {
            version: of.version.clone(),
            nonce: nonce.into(),
            resources: of.resources.len(),
            at: SystemTime::now(),
        });
        status.held_hash = Some(view_hash(status, Some(of)));
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
        assert_eq!(view_hash(&status(true, &[]), Some(&all)), all.content_hash);
        let picked = view_hash(&status(false, &["c", "a", "missing"]), Some(&all));
        assert_eq!(picked, resources(&[("a", "1"), ("c", "3")]).content_hash);
        let empty = TypeResources::new(BTreeMap::new(), None);
        assert_eq!(view_hash(&status(true, &[]), None), empty.content_hash);
    }

    #[test]
    fn nothing_sent_or_unanswered_is_pending() {
        let v1 = resources(&[("a", "1")]);
        let mut s = status(true, &[]);
        assert_eq!(sync_state(&s, Some(&v1)), SyncState::Pending);
        sent(&mut s, "1", &v1);
        assert_eq!(sync_state(&s, Some(&v1)), SyncState::Pending);
        ack(&mut s);
        assert_eq!(sync_state(&s, Some(&v1)), SyncState::Synced);
        let v2 = resources(&[("a", "2")]);
        sent(&mut s, "2", &v2);
        assert_eq!(
            sync_state(&s, Some(&v2)),
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
        assert_eq!(sync_state(&s, Some(&changed)), SyncState::Stale);
    }

    #[test]
    fn named_subscriptions_ignore_changes_to_other_resources() {
        let before = resources(&[("a", "1"), ("b", "1")]);
        let mut s = status(false, &["a"]);
        sent(&mut s, "1", &before);
        ack(&mut s);
        let after = resources(&[("a", "1"), ("b", "2")]);
        assert_eq!(sync_state(&s, Some(&after)), SyncState::Synced);
    }

    #[test]
    fn a_nack_of_the_current_content_is_nacked_until_the_content_moves_on() {
        let v2 = resources(&[("a", "2")]);
        let mut s = status(true, &[]);
        sent(&mut s, "2", &v2);
        nack(&mut s, "bad");
        assert_eq!(sync_state(&s, Some(&v2)), SyncState::Nacked);
        let v3 = resources(&[("a", "3")]);
        assert_eq!(sync_state(&s, Some(&v3)), SyncState::Stale);
        sent(&mut s, "3", &v3);
        ack(&mut s);
        assert_eq!(sync_state(&s, Some(&v3)), SyncState::Synced);
    }

    #[test]
    fn states_serialize_in_capitals() {
        let json = serde_json::to_string(&SyncState::Nacked).unwrap();
        assert_eq!(json, "\"NACKED\"");
        assert_eq!(SyncState::Stale.as_str(), "STALE");
    }
}
