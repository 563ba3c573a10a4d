//! One build of the `/status` document shared by every request that can use it, so polling
//! `/status` costs the xDS side the same with one poller or fifty.
//!
//! - **Shared.** The streams part of the document (the expensive part: thousands of streams
//!   to copy, judge and serialise) is kept with the registry and snapshot generations it was
//!   built from. A request is answered from it while both are unchanged, and the small parts
//!   (counters, reload, scenario, replay, recorder, TLS and limits) are the same as now;
//!   otherwise it waits for a new build.
//! - **True.** A request is only ever answered with a build that began after it arrived (or
//!   from the same generations it saw on arrival): whatever happened before a client asked is
//!   in its answer.
//! - **One at a time, half the time.** Builds run one at a time, off the runtime's threads,
//!   and the next waits as long as the last took: under any number of pollers the admin side
//!   keeps at most half of one core busy building, and concurrent requests that arrived during
//!   one build share the next.
//!
//! Requests for one node (`?node=ID`) are small and built for themselves, under the same
//! one-at-a-time rule.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use axum::body::Bytes;
use tokio::sync::Mutex;

use crate::admin::status::StatusDocument;

/// The longest a build makes the next one wait.
const MAX_REST: Duration = Duration::from_millis(500);

/// What a build of the streams part depends on: the registry's and the snapshot's generations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Stamp {
    pub registry: u64,
    pub snapshot: u64,
}

impl Stamp {
    /// Whether a build from `self` shows everything a request that saw `seen` must see.
    fn covers(self, seen: Stamp) -> bool {
        self.registry >= seen.registry && self.snapshot >= seen.snapshot
    }
}

/// The last build, as its JSON.
#[derive(Debug)]
struct Built {
    stamp: Stamp,
    /// The parts of the document besides the streams, to tell whether they moved since.
    head: StatusDocument,
    json: Bytes,
    took: Duration,
    done: Instant,
}

/// The shared build. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct SharedStatus {
    last: Arc<Mutex<Option<Built>>>,
}

/// Where the `/status` document one request got came from, for the tests and the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DocumentOrigin {
    /// From a build another request made.
    Shared,
    /// From a build of its own (which later requests may share).
    Built,
}

impl SharedStatus {
    /// The whole document as JSON. `stamp` says what is current now, `head` builds the small
    /// parts (the document without streams); `build` builds the whole document (on a blocking
    /// thread).
    pub(crate) async fn document(
        &self,
        stamp: Stamp,
        head: StatusDocument,
        build: impl FnOnce() -> StatusDocument + Send + 'static,
    ) -> Result<(Bytes, DocumentOrigin), String> {
        let mut last = self.last.lock().await;
        if let Some(built) = last.as_ref()
            && built.stamp.covers(stamp)
            && same_head(&built.head, &head)
        {
            return Ok((built.json.clone(), DocumentOrigin::Shared));
        }
        rest_after(last.as_ref()).await;
        let started = Instant::now();
        let built = tokio::task::spawn_blocking(move || {
            let document = build();
            let json = serde_json::to_vec(&document).map_err(|e| e.to_string())?;
            Ok::<_, String>((headless(document), json))
        })
        .await
        .map_err(|e| e.to_string())??;
        let (document, json) = built;
        let json = Bytes::from(json);
        *last = Some(Built {
            stamp,
            head: document,
            json: json.clone(),
            took: started.elapsed(),
            done: Instant::now(),
        });
        Ok((json, DocumentOrigin::Built))
    }

    /// Builds something else (one node's document) under the same one-at-a-time rule.
    pub(crate) async fn alone<T: Send + 'static>(
        &self,
        build: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        let mut last = self.last.lock().await;
        rest_after(last.as_ref()).await;
        let started = Instant::now();
        let built = tokio::task::spawn_blocking(build)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(last) = last.as_mut() {
            // The next build rests after this one too; the shared document stays valid.
            last.took = started.elapsed();
            last.done = Instant::now();
        }
        Ok(built)
    }
}

/// Waits as long after the last build as it took (at most [`MAX_REST`]).
async fn rest_after(last: Option<&Built>) {
    if let Some(last) = last {
        let until = last.done + last.took.min(MAX_REST);
        tokio::time::sleep_until(until.into()).await;
    }
}

/// The document without its streams (what [`same_head`] compares).
pub(crate) fn headless(mut document: StatusDocument) -> StatusDocument {
    document.streams = Vec::new();
    document.recently_closed = Vec::new();
    document
}

/// Whether the small parts of two documents agree (`generated_at` aside: a shared document
/// says when it was built).
fn same_head(a: &StatusDocument, b: &StatusDocument) -> bool {
    let mut b = b.clone();
    b.generated_at = a.generated_at;
    // Snapshot and totals follow the stamp; the rest must match.
    b.snapshot = a.snapshot.clone();
    b.totals = a.totals.clone();
    *a == b
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::admin::status::{Inputs, build};
    use crate::{config::watch::ReloadStatus, snapshot::Snapshot};

    fn document() -> StatusDocument {
        let snapshot = Snapshot::default();
        let reload = ReloadStatus::ok(&snapshot);
        let inputs = Inputs {
            snapshot: &snapshot,
            reload: &reload,
            open: &[],
            closed: &[],
            now: std::time::SystemTime::now(),
        };
        build(inputs, None)
    }

    /// Concurrent requests with the same stamp share one build.
    #[tokio::test]
    async fn concurrent_requests_share_one_build() {
        let shared = SharedStatus::default();
        let builds = Arc::new(AtomicUsize::new(0));
        let doc = document();
        let stamp = Stamp {
            registry: 7,
            snapshot: 1,
        };
        let mut waiting = Vec::new();
        for _ in 0..20 {
            let (shared, builds, doc) = (shared.clone(), builds.clone(), doc.clone());
            waiting.push(tokio::spawn(async move {
                let head = headless(doc.clone());
                shared
                    .document(stamp, head, move || {
                        builds.fetch_add(1, Ordering::SeqCst);
                        doc
                    })
                    .await
                    .unwrap()
                    .1
            }));
        }
        let mut served = Vec::new();
        for w in waiting {
            served.push(w.await.unwrap());
        }
        assert_eq!(builds.load(Ordering::SeqCst), 1, "{served:?}");
        assert_eq!(
            served
                .iter()
                .filter(|s| **s == DocumentOrigin::Built)
                .count(),
            1
        );
    }

    /// A request that saw a newer generation, or other counters, gets a new build.
    #[tokio::test]
    async fn a_newer_generation_or_other_small_parts_build_again() {
        let shared = SharedStatus::default();
        let doc = document();
        let at = |registry| Stamp {
            registry,
            snapshot: 1,
        };
        let ask = |stamp: Stamp, doc: StatusDocument| {
            let shared = shared.clone();
            async move {
                let head = headless(doc.clone());
                shared.document(stamp, head, move || doc).await.unwrap().1
            }
        };
        assert_eq!(ask(at(3), doc.clone()).await, DocumentOrigin::Built);
        assert_eq!(ask(at(3), doc.clone()).await, DocumentOrigin::Shared);
        assert_eq!(
            ask(at(2), doc.clone()).await,
            DocumentOrigin::Shared,
            "older"
        );
        assert_eq!(ask(at(4), doc.clone()).await, DocumentOrigin::Built);
        let mut counted = doc.clone();
        counted.counters.streams_opened += 1;
        assert_eq!(ask(at(4), counted).await, DocumentOrigin::Built);
    }
}
