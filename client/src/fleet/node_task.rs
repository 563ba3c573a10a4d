//! One node's connection loop: open a stream, feed responses to the [`Node`], send what it
//! answers, record everything in the [`Tally`]; on a broken stream back off and resubscribe.
//! All protocol decisions are the node's.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use tokio::sync::{mpsc, watch};
use tonic::transport::Channel;

use super::node::Node;
use super::streams;
use super::tally::Tally;
use crate::config::{BackoffConfig, ClientTls, Variant};
use crate::transport::backoff::Backoff;
use crate::transport::tls;

/// Requests one stream may queue. A response yields at most two (its ACK/NACK and one
/// dependent interest change) and a new stream one per type, so 16 never blocks in practice;
/// if HTTP/2 does stall, the node waits, which only slows that node.
const REQUEST_CAPACITY: usize = 16;

/// Fleet nodes reconnect faster than a single client (cap 5 s): a load test wants the fleet
/// back soon after a server restart, and jitter still spreads thousands of nodes apart.
const BACKOFF: BackoffConfig = BackoffConfig {
    initial: Duration::from_millis(250),
    max: Duration::from_secs(5),
    multiplier: 2.0,
    jitter: 0.3,
};

pub(crate) struct NodeTask {
    pub index: usize,
    pub node: Node,
    pub channel: Channel,
    pub mode: Variant,
    pub max_message_bytes: usize,
    pub tally: Arc<Tally>,
    pub stop: watch::Receiver<bool>,
    /// To explain TLS failures in the report's last error.
    pub tls: Option<Arc<ClientTls>>,
}

impl NodeTask {
    /// Runs until `stop` turns true.
    pub(crate) async fn run(mut self) {
        let mut backoff = Backoff::new(BACKOFF);
        loop {
            self.tally.connecting(self.index);
            let (requests, outgoing) = mpsc::channel(REQUEST_CAPACITY);
            for request in self.node.on_stream_start() {
                // Fewer than REQUEST_CAPACITY: one per type.
                let _ = requests.try_send(request.frame());
            }
            let open = streams::open(
                self.channel.clone(),
                self.mode,
                self.max_message_bytes,
                outgoing,
            );
            let opened = tokio::select! {
                opened = open => opened,
                _ = self.stop.wait_for(|stop| *stop) => return,
            };
            match opened {
                Ok(inbound) => {
                    self.tally.stream_opened();
                    match self.stream(inbound, &requests, &mut backoff).await {
                        Some(error) => self.tally.stream_ended(true, error),
                        None => {
                            self.tally.stream_closed();
                            return;
                        }
                    }
                }
                Err(status) => self.tally.stream_ended(false, Some(self.why(&status))),
            }
            let delay = backoff.next_delay();
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = self.stop.wait_for(|stop| *stop) => return,
            }
        }
    }

    fn why(&self, status: &tonic::Status) -> String {
        tls::describe(status, self.tls.as_deref(), status.to_string())
    }

    /// Handles responses until the stream ends (`Some(why)`) or the fleet stops (`None`).
    async fn stream(
        &mut self,
        mut inbound: streams::MessageReader,
        requests: &mpsc::Sender<Bytes>,
        backoff: &mut Backoff,
    ) -> Option<Option<String>> {
        loop {
            let message = tokio::select! {
                message = inbound.message() => message,
                _ = self.stop.wait_for(|stop| *stop) => return None,
            };
            let bytes = match message {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return Some(Some("the server ended the stream".into())),
                Err(status) => return Some(Some(self.why(&status))),
            };
            backoff.reset();
            let size = bytes.remaining();
            let handled = match self.node.on_response(bytes) {
                Ok(handled) => handled,
                Err(e) => {
                    self.tally
                        .undecodable(size, format!("undecodable response: {e}"));
                    continue;
                }
            };
            for request in handled.requests {
                if requests.send(request.frame()).await.is_err() {
                    return Some(Some("the request stream closed".into()));
                }
            }
            let configured = self.node.configured();
            (self.tally).response(self.index, size, handled.outcome.as_ref(), configured);
        }
    }
}
