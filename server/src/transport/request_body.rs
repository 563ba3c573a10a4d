//! A stream's requests, read off its HTTP/2 request body as the data chunks arrive (see
//! [`xdsloop_proto::grpc_frames`]) and decoded by the protocol's request types.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Buf;
use futures::Stream;
use http_body::Body as _;
use tonic::{Status, body::Body};
use xdsloop_proto::grpc_frames::Messages;

use crate::protocol::request::Inbound;

/// The requests of one stream, read off its HTTP/2 body (see [`xdsloop_proto::grpc_frames`]):
/// a request inside one data chunk is a slice of it, one spread over several is copied once
/// into a buffer of its exact size; nothing is kept between requests (a per-stream receive
/// buffer would keep the capacity of the stream's largest request, a full name list, for as
/// long as the stream lives).
pub struct Requests<Req> {
    body: Body,
    messages: Messages,
    done: bool,
    request: PhantomData<fn() -> Req>,
}

impl<Req> Requests<Req> {
    pub fn new(body: Body, max_message_bytes: usize) -> Self {
        Self {
            body,
            messages: Messages::new(max_message_bytes, "request"),
            done: false,
            request: PhantomData,
        }
    }
}

impl<Req: Inbound> Stream for Requests<Req> {
    type Item = Result<Req, Status>;

    /// Requests in order; after an error (a bad message, a broken body) nothing more. The
    /// client ending its side (end of body, trailers) ends the stream. A broken body (reset,
    /// connection gone) is `CANCELLED`; a bad message is any other code.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match this.messages.next_message() {
                Ok(Some(mut message)) => {
                    let bytes = message.copy_to_bytes(message.remaining());
                    let request = Req::decode(bytes)
                        .map_err(|e| Status::internal(format!("decoding a request: {e}")));
                    this.done = request.is_err();
                    return Poll::Ready(Some(request));
                }
                Ok(None) => {}
                Err(status) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(status)));
                }
            }
            match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        this.messages.push(data);
                    }
                }
                Some(Err(broken)) => {
                    // The client reset the stream or the connection failed: nobody is left to
                    // read a status, and the stream loop tells this apart from a bad message.
                    this.done = true;
                    let gone = format!("the request stream broke: {}", broken.message());
                    return Poll::Ready(Some(Err(Status::cancelled(gone))));
                }
                None => {
                    this.done = true;
                    if this.messages.pending() > 0 {
                        let cut = Status::internal("the request stream ended inside a message");
                        return Poll::Ready(Some(Err(cut)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;
    use xdsloop_proto::discovery::DiscoveryRequest;

    use super::*;
    use crate::protocol::request::SotwRequest;
    use crate::test_support::full_request as full;

    #[tokio::test]
    async fn requests_are_read_across_data_chunks_until_the_body_ends() {
        use futures::StreamExt;
        use http_body::Frame;
        use http_body_util::StreamBody;
        let framed = |request: &DiscoveryRequest| {
            let body = request.encode_to_vec();
            let mut message = vec![0];
            message.extend((body.len() as u32).to_be_bytes());
            message.extend(body);
            message
        };
        let mut wire = framed(&full());
        let second = DiscoveryRequest {
            response_nonce: "1-2".into(),
            ..full()
        };
        wire.extend(framed(&second));
        let body = |wire: Vec<u8>| {
            let chunks: Vec<Result<_, Status>> = (wire.chunks(37))
                .map(|c| Ok(Frame::data(bytes::Bytes::copy_from_slice(c))))
                .collect();
            Body::new(StreamBody::new(futures::stream::iter(chunks)))
        };
        let requests: Vec<_> = Requests::<SotwRequest>::new(body(wire.clone()), 1 << 20)
            .collect()
            .await;
        let got: Vec<_> = requests.iter().map(|r| r.as_ref().unwrap()).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].head.response_nonce, "1-2");
        assert_eq!(got[1].names(), full().resource_names);
        // A body that ends inside a message: the requests before it, then the error.
        wire.truncate(wire.len() - 3);
        let requests: Vec<_> = Requests::<SotwRequest>::new(body(wire), 1 << 20)
            .collect()
            .await;
        assert_eq!(requests.len(), 2);
        assert!(requests[0].is_ok());
        let status = requests[1].as_ref().unwrap_err();
        assert!(status.message().contains("inside a message"), "{status:?}");
    }
}
