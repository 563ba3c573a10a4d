//! The async loop around a stream state machine. It only moves messages: requests in, snapshot
//! changes in, responses out, status to the registry. All protocol decisions are in
//! [`crate::sotw`] and [`crate::delta`].

use std::sync::Arc;

use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, watch};
use tonic::Status;
use tracing::{debug, info};

use crate::{
    Snapshot,
    registry::{StreamEntry, TypeStatus},
};

/// Responses one stream may have queued for gRPC before its loop waits. An update yields at most
/// one response per type, and responses can be many MiB each: a small bound caps the memory a
/// slow client pins, while the loop waits the watch channel keeps only the newest snapshot
/// (latest wins, never a queue of stale ones).
pub const OUTBOUND_CAPACITY: usize = 4;

/// A sans-I/O stream state machine (SotW or Delta).
pub trait StreamMachine: Send + 'static {
    type Request: Send + 'static;
    type Response: Send + 'static;
    /// Handles one client request; returns the responses to send, in order.
    fn on_request(&mut self, request: Self::Request) -> Vec<Self::Response>;
    /// Handles a new snapshot; returns the responses to send, in order.
    fn on_snapshot(&mut self, snapshot: Arc<Snapshot>) -> Vec<Self::Response>;
    /// The node id, once the first request has told it.
    fn node_id(&self) -> Option<&str>;
    /// Status of the types whose state changed since the last call.
    fn take_status(&mut self) -> Vec<TypeStatus>;
}

/// Runs one stream (its machine built from `snapshots`' current value, already marked seen)
/// until the client goes away, the request stream ends or fails, or `shutdown`
/// turns true. Whatever happens here affects this stream only (S12).
pub async fn run<M, S>(
    mut machine: M,
    mut requests: S,
    mut snapshots: watch::Receiver<Arc<Snapshot>>,
    mut shutdown: watch::Receiver<bool>,
    responses: mpsc::Sender<Result<M::Response, Status>>,
    entry: StreamEntry,
) where
    M: StreamMachine,
    S: Stream<Item = Result<M::Request, Status>> + Unpin,
{
    let stream = entry.id();
    info!(stream, "stream opened");
    let (mut node_published, mut source_open) = (false, true);
    loop {
        let out = tokio::select! {
            request = requests.next() => match request {
                Some(Ok(request)) => machine.on_request(request),
                Some(Err(status)) => {
                    // A malformed message or a broken transport: end this stream only, and
                    // tell the client why if it is still listening.
                    info!(stream, code = ?status.code(), error = status.message(), "stream failed");
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
        entry.update(machine.take_status());
        if !send_all(&responses, out, &mut shutdown).await {
            break;
        }
    }
    info!(stream, "stream closed");
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
