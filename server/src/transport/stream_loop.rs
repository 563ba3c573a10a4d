//! The async loop around a stream state machine. It only moves messages: requests in, snapshot
//! changes in, responses out, status to the registry. All protocol decisions are in
//! [`crate::protocol::sotw`] and [`crate::protocol::delta`].

use std::sync::Arc;

use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, watch};
use tonic::Status;
use tracing::{debug, info, warn};
use xdsloop_proto::type_url;

use crate::{
    Snapshot,
    admin::registry::StreamEntry,
    protocol::{bounds::SubscriptionBounds, machine::StreamMachine},
};

/// Responses one stream may have queued for gRPC before its loop waits. An update yields at most
/// one response per type, and responses can be many MiB each: a small bound caps the memory a
/// slow client pins, while the loop waits the watch channel keeps only the newest snapshot
/// (latest wins, never a queue of stale ones).
pub const OUTBOUND_CAPACITY: usize = 4;

/// What a stream loop listens to besides its requests.
#[derive(Debug, Clone)]
pub struct Feeds {
    /// Its current value is the snapshot the machine was built from, already marked seen.
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// Turns true when the server stops.
    pub shutdown: watch::Receiver<bool>,
    /// The gRPC encoding limit, to explain in the log why a client gets OUT_OF_RANGE.
    pub max_message_bytes: usize,
    /// The request limit; the stream's subscriptions are bounded by it too.
    pub max_request_bytes: usize,
}

/// Runs one stream until the client goes away, the request stream ends or fails, or the server
/// stops. Whatever happens here affects this stream only (S12).
pub async fn run<M, S>(
    mut machine: M,
    mut requests: S,
    feeds: Feeds,
    responses: mpsc::Sender<Result<M::Response, Status>>,
    entry: StreamEntry,
) where
    M: StreamMachine,
    S: Stream<Item = Result<M::Request, Status>> + Unpin,
{
    let Feeds {
        mut snapshots,
        mut shutdown,
        max_message_bytes,
        max_request_bytes,
    } = feeds;
    let mut bounds = SubscriptionBounds::new(max_request_bytes);
    let stream = entry.id();
    let (mut node_published, mut source_open) = (false, true);
    loop {
        let out = tokio::select! {
            request = requests.next() => match request {
                Some(Ok(request)) => machine.on_request(request),
                Some(Err(status)) => {
                    // A malformed message, or a client that vanished mid-stream: end this
                    // stream only, and tell the client why if it is still listening.
                    info!(stream, code = ?status.code(), error = status.message(), "stream ended by an error");
                    let _ = responses.try_send(Err(status));
                    break;
                }
                None => {
                    debug!(stream, "client closed its side of the stream");
                    break;
                }
            },
            changed = snapshots.changed(), if source_open => {
                if changed.is_err() {
                    // The snapshot source is gone: keep serving the last snapshot.
                    source_open = false;
                    continue;
                }
                let snapshot = snapshots.borrow_and_update().clone();
                machine.on_snapshot(snapshot)
            },
            _ = shutdown.wait_for(|stop| *stop) => break,
            _ = responses.closed() => {
                debug!(stream, "client went away");
                break;
            }
        };
        if !node_published && let Some(node) = machine.node_id() {
            info!(stream, node, "node identified");
            entry.set_node(node);
            node_published = true;
        }
        let changed = machine.take_status();
        let over = bounds.check(&changed);
        entry.update(changed);
        if let Err(reason) = over {
            warn!(stream, %reason, "stream ended: its subscriptions are over the limit");
            let _ = responses.try_send(Err(Status::resource_exhausted(reason)));
            break;
        }
        warn_oversized::<M>(stream, &out, max_message_bytes);
        if !send_all(&responses, out, &mut shutdown).await {
            break;
        }
    }
    info!(stream, "stream closed");
}

/// tonic refuses to encode these and tells only the client; say it in the server log too.
fn warn_oversized<M: StreamMachine>(stream: u64, out: &[M::Response], limit: usize) {
    for response in out {
        let (url, bytes) = M::payload(response);
        if bytes > limit {
            warn!(stream, r#type = %type_url::short_name(url), bytes, limit,
                "response larger than --max-message-bytes: the client gets OUT_OF_RANGE instead");
        }
    }
}

/// Sends one batch in order; false when the client went away or the server is stopping.
async fn send_all<T>(
    responses: &mpsc::Sender<Result<T, Status>>,
    out: Vec<T>,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    for response in out {
        // A client that stops reading must not keep a shutting-down server waiting.
        tokio::select! {
            sent = responses.send(Ok(response)) => if sent.is_err() {
                return false;
            },
            _ = shutdown.wait_for(|stop| *stop) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio_stream::wrappers::ReceiverStream;
    use xdsloop_proto::{discovery::DiscoveryResponse, type_url::CLUSTER};

    use super::*;
    use crate::{
        admin::registry::{Registry, StreamKind},
        protocol::request::SotwRequest,
        protocol::sotw::SotwStream,
        test_support::{snapshot, sotw},
    };

    type Requests = mpsc::Sender<Result<SotwRequest, Status>>;
    type Responses = mpsc::Receiver<Result<crate::protocol::response::SotwResponse, Status>>;

    struct Harness {
        source: watch::Sender<Arc<Snapshot>>,
        requests: Requests,
        responses: Responses,
        registry: Registry,
        task: tokio::task::JoinHandle<()>,
        _stop: watch::Sender<bool>,
    }

    fn clusters(version: u32) -> Arc<Snapshot> {
        let v = version.to_string();
        snapshot(u64::from(version), &[(CLUSTER, &[("c1", v.as_str())])])
    }

    fn start() -> Harness {
        let registry = Registry::new();
        let entry = registry.open(StreamKind::ADS_SOTW, None, None);
        let (source, mut snapshots) = watch::channel(clusters(0));
        let machine = SotwStream::new(entry.id(), snapshots.borrow_and_update().clone());
        let (requests, inbound) = mpsc::channel(4);
        let (outbound, responses) = mpsc::channel(OUTBOUND_CAPACITY);
        let (stop, shutdown) = watch::channel(false);
        let feeds = Feeds {
            snapshots,
            shutdown,
            max_message_bytes: usize::MAX,
            max_request_bytes: usize::MAX,
        };
        let inbound = ReceiverStream::new(inbound);
        let task = tokio::spawn(run(machine, inbound, feeds, outbound, entry));
        Harness {
            source,
            requests,
            responses,
            registry,
            task,
            _stop: stop,
        }
    }

    async fn recv(responses: &mut Responses) -> DiscoveryResponse {
        let next = tokio::time::timeout(Duration::from_secs(5), responses.recv()).await;
        next.expect("a response in time")
            .expect("open")
            .expect("ok")
            .to_message()
    }

    #[tokio::test]
    async fn latest_wins_a_slow_stream_gets_the_newest_snapshot_not_a_queue() {
        let mut h = start();
        h.requests
            .send(Ok(sotw(CLUSTER, &[], "", "").into()))
            .await
            .unwrap();
        recv(&mut h.responses).await;
        // The client reads nothing while 100 reloads happen.
        for version in 1..=100 {
            h.source.send_replace(clusters(version));
            tokio::task::yield_now().await;
        }
        let newest = clusters(100).base[CLUSTER].version.clone();
        let mut received = 0;
        loop {
            received += 1;
            if recv(&mut h.responses).await.version_info == newest {
                break;
            }
        }
        // The bounded channel, the one send in flight, then straight to the newest.
        assert!(
            received <= OUTBOUND_CAPACITY + 2,
            "{received} responses queued"
        );
    }

    #[tokio::test]
    async fn a_vanished_client_ends_its_stream_and_leaves_the_registry() {
        let h = start();
        assert_eq!(h.registry.len(), 1);
        drop(h.responses);
        let ended = tokio::time::timeout(Duration::from_secs(5), h.task).await;
        ended.expect("the loop ends").unwrap();
        assert!(h.registry.is_empty());
    }
}
