//! What the SotW and Delta streams of the naive server share: the stream loop, versions,
//! the v2 type URLs two bugs use, and the order of one update's responses.

use std::collections::BTreeMap;

use tokio::sync::mpsc;
use tonic::{Status, Streaming};
use xdsloop_proto::{Resource, type_url, version::fnv1a};

use super::{Bug, Legal, Shared, store::Set};

/// One stream's protocol state.
pub(super) trait Machine: Send + 'static {
    type Request: prost::Message + Default + Send + 'static;
    type Response: Send + 'static;
    /// `Err` ends the stream with that status.
    fn on_request(
        &mut self,
        request: Self::Request,
        set: &Set,
    ) -> Result<Vec<Self::Response>, Status>;
    fn on_set(&mut self, set: &Set) -> Vec<Self::Response>;
}

pub(super) async fn run<M: Machine>(
    mut machine: M,
    mut requests: Streaming<M::Request>,
    shared: Shared,
    responses: mpsc::Sender<Result<M::Response, Status>>,
) {
    let Shared {
        bug, mut set, kill, ..
    } = shared;
    // Under [`Bug::MalformedKillsAll`] a malformed request bumps the counter: the streams open
    // then die; streams opened later work again (the server "restarted").
    let mut killed = kill.subscribe();
    let born = *killed.borrow_and_update();
    loop {
        let out = tokio::select! {
            request = requests.message() => match request {
                Ok(Some(request)) => {
                    let current = set.borrow_and_update().clone();
                    machine.on_request(request, &current)
                }
                Ok(None) => return,
                Err(status) => {
                    if bug == Bug::MalformedKillsAll {
                        kill.send_modify(|n| *n += 1);
                    }
                    Err(status)
                }
            },
            changed = set.changed() => {
                if changed.is_err() {
                    return;
                }
                let current = set.borrow_and_update().clone();
                Ok(machine.on_set(&current))
            }
            _ = killed.wait_for(|n| *n != born) => Err(Status::internal("naive server: a worker crashed")),
        };
        match out {
            Ok(out) => {
                for response in out {
                    if responses.send(Ok(response)).await.is_err() {
                        return;
                    }
                }
            }
            Err(status) => {
                let _ = responses.send(Err(status)).await;
                return;
            }
        }
    }
}

/// The resources of one type (none for a type the set lacks).
pub(super) fn of_type<'s>(
    set: &'s Set,
    url: &str,
) -> impl Iterator<Item = (&'s String, &'s Resource)> {
    set.get(url).into_iter().flat_map(BTreeMap::iter)
}

/// A version for a set of resources: a hash of names and bodies.
pub(super) fn version<'r>(resources: impl Iterator<Item = &'r Resource>) -> String {
    let mut parts: Vec<&[u8]> = Vec::new();
    for r in resources {
        parts.push(r.name.as_bytes());
        parts.push(&r.bytes);
    }
    format!("{:016x}", fnv1a(&parts))
}

/// `type.googleapis.com/envoy.api.v2.Cluster` for the v3 Cluster URL: the xDS v2 name two
/// bugs put where v3 belongs.
pub(super) fn v2(url: &str) -> String {
    let message = url.rsplit('.').next().unwrap_or(url);
    format!("{}envoy.api.v2.{message}", type_url::PREFIX)
}

/// Orders one update's responses: additions parents first, then removals dependents first
/// (S11); [`Bug::DependentsFirst`] reverses the additions, [`Legal::RemovalsParentsFirst`]
/// the removals.
pub(super) fn order<R>(mut planned: Vec<(String, bool, R)>, bug: Bug, legal: Legal) -> Vec<R> {
    planned.sort_by_key(|(url, removal_only, _)| {
        let rank = type_url::order(url);
        let parents_first = if *removal_only {
            legal == Legal::RemovalsParentsFirst
        } else {
            bug != Bug::DependentsFirst
        };
        let key = if parents_first {
            rank
        } else {
            usize::MAX - rank
        };
        (*removal_only, key)
    });
    planned.into_iter().map(|(_, _, r)| r).collect()
}

/// Under [`Bug::SilentEds`], whether this stream's EDS goes unanswered: decided at its first
/// EDS request (kept in `decided`), true for every stream but the server's first to ask.
pub(super) fn eds_silenced(
    bug: Bug,
    streams: &std::sync::atomic::AtomicU64,
    decided: &mut Option<bool>,
) -> bool {
    if bug != Bug::SilentEds {
        return false;
    }
    *decided.get_or_insert_with(|| streams.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0)
}
