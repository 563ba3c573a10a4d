//! The fleet's gRPC plumbing: M shared HTTP/2 connections, and ADS streams whose responses
//! are read straight off the HTTP/2 body, kept in the chunks they arrived in (see
//! [`xdsloop_proto::grpc_frames`]: no per-stream receive buffer) and decoded later by the node,
//! only as deep as it needs.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::{Service, http};
use tonic::transport::Channel;
pub(crate) use xdsloop_proto::grpc_frames::Chunks;
use xdsloop_proto::grpc_frames::Messages;
use xdsloop_proto::services::{ADS_DELTA_PATH, ADS_SOTW_PATH};

use crate::config::{ClientTls, Variant};
use crate::error::ClientError;
use crate::transport::endpoint;

/// Flow-control windows: large responses (hundreds of KiB per node) should not stall on
/// HTTP/2's 64 KiB default window while thousands of streams share a connection, and a fleet
/// that falls behind should not let the server queue more than it can read soon (larger
/// windows put more in flight than the fleet reads while it is still in cache).
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONNECTION_WINDOW: u32 = 4 * 1024 * 1024;
/// The largest HTTP/2 DATA frame the fleet accepts (the default is 16 KiB). A 400 KiB response
/// then arrives in one or two frames instead of 25: less per-frame work on both sides, and
/// the decoder slices fields out of one chunk. Envoy keeps the 16 KiB default; this only changes framing, never what is sent.
const MAX_FRAME: u32 = 1024 * 1024;

/// `connections` lazily connected channels to `server`; each is one HTTP/2 connection that
/// reconnects by itself.
pub(crate) fn connect(
    server: &str,
    connections: usize,
    connect_timeout: Duration,
    tls: Option<&ClientTls>,
) -> Result<Vec<Channel>, ClientError> {
    let endpoint = endpoint(server, connect_timeout, tls)?
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_frame_size(MAX_FRAME);
    Ok((0..connections.max(1))
        .map(|_| endpoint.connect_lazy())
        .collect())
}

/// Opens one ADS stream on `channel`, sending the gRPC messages `requests` yields (see
/// [`super::outgoing::FleetRequest::frame`]); responses are read
/// with [`MessageReader`] (no per-stream receive buffer).
pub(crate) async fn open(
    mut channel: Channel,
    mode: Variant,
    max_message_bytes: usize,
    requests: mpsc::Receiver<Bytes>,
) -> Result<MessageReader, Status> {
    let unavailable = |e: tonic::transport::Error| Status::unavailable(e.to_string());
    std::future::poll_fn(|cx| channel.poll_ready(cx))
        .await
        .map_err(unavailable)?;
    let path = match mode {
        Variant::Sotw => ADS_SOTW_PATH,
        Variant::Delta => ADS_DELTA_PATH,
    };
    let frames = ReceiverStream::new(requests).map(|message| Ok::<_, Status>(Frame::data(message)));
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri(path)
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header(http::header::TE, "trailers")
        .body(Body::new(StreamBody::new(frames)))
        .map_err(|e| Status::internal(e.to_string()))?;
    let response = channel.call(request).await.map_err(unavailable)?;
    MessageReader::new(response, max_message_bytes)
}

/// Reads length-prefixed gRPC messages (uncompressed) and the final status from a response.
pub(crate) struct MessageReader {
    body: Body,
    messages: Messages,
    /// How the stream ended, once its trailers (or the end of the body) arrived.
    end: Option<Result<(), Status>>,
}

impl MessageReader {
    /// Checks the response head: an HTTP error or a trailers-only gRPC error is the `Err`.
    pub(crate) fn new(
        response: http::Response<Body>,
        max_message_bytes: usize,
    ) -> Result<Self, Status> {
        let (head, body) = response.into_parts();
        if head.status != http::StatusCode::OK {
            return Err(Status::unknown(format!("HTTP status {}", head.status)));
        }
        if let Some(status) = Status::from_header_map(&head.headers)
            && status.code() != tonic::Code::Ok
        {
            return Err(status);
        }
        Ok(Self {
            body,
            messages: Messages::new(max_message_bytes, "response"),
            end: None,
        })
    }

    /// The next message; `Ok(None)` once the server ended the stream with status OK.
    pub(crate) async fn message(&mut self) -> Result<Option<Chunks>, Status> {
        loop {
            if let Some(message) = self.messages.next_message()? {
                return Ok(Some(message));
            }
            if let Some(end) = &self.end {
                if self.messages.pending() > 0 {
                    return Err(Status::internal("the stream ended inside a message"));
                }
                return end.clone().map(|()| None);
            }
            let Some(frame) = self.body.frame().await else {
                let missing = Status::unknown("the stream ended without a gRPC status");
                self.end = Some(Err(missing));
                continue;
            };
            match frame?.into_data() {
                Ok(data) => self.messages.push(data),
                Err(frame) => {
                    let trailers = frame.into_trailers().unwrap_or_default();
                    self.end = Some(match Status::from_header_map(&trailers) {
                        Some(status) if status.code() != tonic::Code::Ok => Err(status),
                        Some(_) => Ok(()),
                        None => Err(Status::unknown("the trailers carry no gRPC status")),
                    });
                }
            }
        }
    }
}
