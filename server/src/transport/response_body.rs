//! The response body of a streaming xDS call (ADS and the per-type services), written frame by
//! frame without copying resources.
//!
//! tonic's own streaming body encodes every message into a per-stream buffer: the resources
//! are copied once per stream, and the buffer keeps the capacity of the largest response for
//! as long as the stream lives, which across a fleet is most of the server's memory. Here
//! each gRPC message goes out as two chunks: a small one this stream owns (the
//! 5-byte gRPC prefix and the stream's own fields: nonce, version, type URL, removals) and the
//! resource entries, reference-counted `Bytes` shared with every other stream sending the
//! same view. HTTP/2 sends `Bytes` chunks as they are, so a stream pins only its own fields.

use std::{
    collections::VecDeque,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::{BufMut, Bytes, BytesMut};
use futures::Stream;
use http_body::{Frame, SizeHint};
use prost::Message;
use tonic::{Status, body::Body, codegen::http};

use crate::{
    net::conn::PeerInfo,
    protocol::request::Inbound,
    protocol::response::Outbound,
    transport::discovery::{Discovery, ResponseStream},
    transport::request_body::Requests,
    transport::stream,
};

/// Entries smaller than this are copied into the stream's own chunk: a chunk per tiny entry
/// costs HTTP/2 more bookkeeping than the copy.
const SHARE_AT_LEAST: usize = 4096;

/// The body of one streaming response: gRPC messages from `responses`, then the trailers
/// carrying the stream's final status.
pub(super) struct ResponseBody<M> {
    responses: ResponseStream<Outbound<M>>,
    /// Chunks of the message being sent, in order.
    pending: VecDeque<Bytes>,
    max_message_bytes: usize,
    done: bool,
}

impl<M> ResponseBody<M> {
    pub(super) fn new(responses: ResponseStream<Outbound<M>>, max_message_bytes: usize) -> Self {
        Self {
            responses,
            pending: VecDeque::new(),
            max_message_bytes,
            done: false,
        }
    }
}

impl<M: Message + Default> ResponseBody<M> {
    /// Queues the chunks of `out` as one length-prefixed gRPC message (no compression).
    fn queue(&mut self, out: &Outbound<M>) -> Result<(), Status> {
        let len = out.encoded_len();
        if len > self.max_message_bytes {
            // What tonic answers for a message over its encoding limit (S13).
            return Err(Status::out_of_range(format!(
                "Error, encoded message length too large: found {len} bytes, the limit is: {} bytes",
                self.max_message_bytes
            )));
        }
        let prefix_len =
            u32::try_from(len).map_err(|_| Status::out_of_range("message over 4 GiB"))?;
        let mut own = BytesMut::with_capacity(5 + out.head.encoded_len());
        own.put_u8(0);
        own.put_u32(prefix_len);
        out.head.encode_raw(&mut own);
        for entry in &out.entries {
            if entry.len() < SHARE_AT_LEAST {
                own.put_slice(entry);
                continue;
            }
            if !own.is_empty() {
                self.pending.push_back(own.split().freeze());
            }
            self.pending.push_back(entry.clone());
        }
        if !own.is_empty() {
            self.pending.push_back(own.freeze());
        }
        Ok(())
    }

    fn finish(&mut self, status: &Status) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        self.done = true;
        let mut trailers = http::HeaderMap::new();
        if let Err(unencodable) = status.add_header(&mut trailers) {
            trailers.clear();
            let _ = Status::internal(unencodable.message().to_string()).add_header(&mut trailers);
        }
        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
    }
}

impl<M: Message + Default + Send + 'static> http_body::Body for ResponseBody<M> {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if let Some(chunk) = this.pending.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.responses).poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => this.finish(&Status::ok("")),
            // A body error: hyper resets the HTTP/2 stream, and the client gets no status.
            Poll::Ready(Some(Err(status))) if stream::act::is_reset(&status) => {
                this.done = true;
                Poll::Ready(Some(Err(status)))
            }
            Poll::Ready(Some(Err(status))) => this.finish(&status),
            Poll::Ready(Some(Ok(out))) => match this.queue(&out) {
                // A message has at least its prefix chunk.
                Ok(()) => Poll::Ready(this.pending.pop_front().map(|c| Ok(Frame::data(c)))),
                Err(status) => this.finish(&status),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.pending.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// A streaming call's two message limits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub request: usize,
    /// S13: far above gRPC's 4 MiB default.
    pub response: usize,
}

impl Limits {
    pub(super) fn of(discovery: &Discovery) -> Self {
        Self {
            request: discovery.max_request_bytes(),
            response: discovery.max_message_bytes(),
        }
    }
}

/// Serves one streaming xDS call: reads the requests off the request body ([`Requests`], with
/// the connection's budget when it came through [`crate::net::incoming`]), starts the stream
/// with `start`, and answers with its responses as a [`ResponseBody`].
pub(super) fn serve<Req, M>(
    request: http::Request<Body>,
    limits: Limits,
    start: impl FnOnce(Option<PeerInfo>, Requests<Req>) -> ResponseStream<Outbound<M>>,
) -> http::Response<Body>
where
    Req: Inbound,
    M: Message + Default + Send + 'static,
{
    if let Some(encoding) = request.headers().get("grpc-encoding")
        && encoding != "identity"
    {
        let encoding = encoding.to_str().unwrap_or("(not ASCII)");
        let message = format!("requests compressed with {encoding} are not supported");
        return Status::unimplemented(message).into_http();
    }
    let peer = request.extensions().get::<PeerInfo>().cloned();
    let budget = peer.as_ref().map(|p| p.budget.clone());
    let requests = Requests::new(request.into_body(), limits.request, budget);
    response(start(peer, requests), limits.response)
}

/// The HTTP response of a streaming call: gRPC headers and a [`ResponseBody`].
fn response<M: Message + Default + Send + 'static>(
    responses: ResponseStream<Outbound<M>>,
    max_message_bytes: usize,
) -> http::Response<Body> {
    let body = ResponseBody::new(responses, max_message_bytes);
    let mut response = http::Response::new(Body::new(body));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    response
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use http_body::Body as _;
    use tokio::sync::mpsc;
    use tokio_stream::wrappers::ReceiverStream;
    use xdsloop_proto::discovery::{Any, DiscoveryResponse};

    use super::*;

    async fn next(body: &mut ResponseBody<DiscoveryResponse>) -> Frame<Bytes> {
        let frame = poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
        frame.expect("a frame").expect("no body error")
    }

    fn grpc_status(frame: Frame<Bytes>) -> String {
        let trailers = frame.into_trailers().expect("trailers");
        trailers["grpc-status"].to_str().unwrap().to_string()
    }

    fn response(entries: Vec<Bytes>) -> Outbound<DiscoveryResponse> {
        let head = DiscoveryResponse {
            version_info: "v1".into(),
            nonce: "1-1".into(),
            ..Default::default()
        };
        Outbound {
            head,
            entries,
            manifest: Default::default(),
        }
    }

    /// One resource entry of `size` value bytes, encoded as the snapshot caches it.
    fn entry(size: usize) -> Bytes {
        let one = DiscoveryResponse {
            resources: vec![Any {
                type_url: "t".into(),
                value: vec![7; size],
            }],
            ..Default::default()
        };
        one.encode_to_vec().into()
    }

    #[tokio::test]
    async fn a_message_is_its_prefix_and_fields_then_the_shared_entry_uncopied() {
        let (tx, rx) = mpsc::channel(4);
        let mut body = ResponseBody::new(ReceiverStream::new(rx), 1 << 20);
        let (big, small) = (entry(10_000), entry(10));
        let out = response(vec![small.clone(), big.clone()]);
        let expected = out.to_message();
        tx.send(Ok(out)).await.unwrap();
        let own = next(&mut body).await.into_data().unwrap();
        let shared = next(&mut body).await.into_data().unwrap();
        assert_eq!(
            shared.as_ptr(),
            big.as_ptr(),
            "the shared entry is sent as is"
        );
        let wire = [own.as_ref(), shared.as_ref()].concat();
        assert_eq!(wire[0], 0, "not compressed");
        let len = u32::from_be_bytes(wire[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, wire.len() - 5);
        assert_eq!(DiscoveryResponse::decode(&wire[5..]).unwrap(), expected);
        drop(tx);
        assert_eq!(grpc_status(next(&mut body).await), "0");
        assert!(body.is_end_stream());
    }

    #[tokio::test]
    async fn a_message_over_the_limit_ends_the_stream_with_out_of_range() {
        let (tx, rx) = mpsc::channel(4);
        let mut body = ResponseBody::new(ReceiverStream::new(rx), 1000);
        tx.send(Ok(response(vec![entry(2000)]))).await.unwrap();
        let code = tonic::Code::OutOfRange as i32;
        assert_eq!(grpc_status(next(&mut body).await), code.to_string());
    }
}
