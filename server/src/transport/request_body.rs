//! A stream's requests, read off its HTTP/2 request body as the data chunks arrive (see
//! [`xdsloop_proto::grpc_frames`]) and decoded by the protocol's request types.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Buf;
use futures::Stream;
use http_body::Body as _;
use tokio::sync::OwnedSemaphorePermit;
use tonic::{Status, body::Body};
use xdsloop_proto::grpc_frames::Messages;

use crate::{net::conn::RequestBudget, protocol::request::Inbound};

/// The requests of one stream, read off its HTTP/2 body (see [`xdsloop_proto::grpc_frames`]):
/// a request inside one data chunk is a slice of it, one spread over several is copied once
/// into a buffer of its exact size; nothing is kept between requests (a per-stream receive
/// buffer would keep the capacity of the stream's largest request, a full name list, for as
/// long as the stream lives).
///
/// Limits: a request whose length prefix says it is over `--max-request-bytes` ends the stream
/// with `RESOURCE_EXHAUSTED` before any of it is buffered. A request still arriving reserves
/// its whole length from its connection's [`RequestBudget`] as soon as the prefix is in; if
/// the connection's other streams hold the budget, this stream ends with `RESOURCE_EXHAUSTED`
/// rather than waiting (a stream left waiting would leave its data in HTTP/2's connection
/// window, and the streams holding the budget could then never finish theirs).
pub(crate) struct Requests<Req> {
    body: Body,
    messages: Messages,
    max_request_bytes: usize,
    budget: Option<RequestBudget>,
    /// The budget reserved for the request being received.
    reserved: Option<OwnedSemaphorePermit>,
    done: bool,
    request: PhantomData<fn() -> Req>,
}

impl<Req> Requests<Req> {
    /// Requests of at most `max_request_bytes`; unfinished ones reserved from `budget` (the
    /// connection's, if the connection came from [`crate::net::incoming`]).
    pub(crate) fn new(body: Body, max_request_bytes: usize, budget: Option<RequestBudget>) -> Self {
        Self {
            body,
            messages: Messages::new(max_request_bytes, "request"),
            max_request_bytes,
            budget,
            reserved: None,
            done: false,
            request: PhantomData,
        }
    }

    /// Checks the length of the request whose prefix has arrived: over the limit, or (still
    /// arriving) not fitting in the connection's budget, is the stream's end.
    fn admit_next(&mut self) -> Result<(), Status> {
        let Some(len) = self.messages.next_len() else {
            return Ok(());
        };
        if len > self.max_request_bytes {
            return Err(Status::resource_exhausted(format!(
                "a request of {len} bytes is over the --max-request-bytes limit ({})",
                self.max_request_bytes
            )));
        }
        let arrived = self.messages.pending() >= 5 + len;
        let (Some(budget), None, false) = (&self.budget, &self.reserved, arrived) else {
            return Ok(());
        };
        let permits = u32::try_from(len).unwrap_or(u32::MAX);
        match budget.semaphore().try_acquire_many_owned(permits) {
            Ok(permit) => {
                self.reserved = Some(permit);
                Ok(())
            }
            Err(_) => Err(Status::resource_exhausted(format!(
                "a request of {len} bytes does not fit in this connection's budget for \
                 unfinished requests ({} bytes free): its other streams hold the rest \
                 (the budget is 2 x --max-request-bytes)",
                budget.available()
            ))),
        }
    }

    fn fail(&mut self, status: Status) -> Poll<Option<Result<Req, Status>>> {
        self.done = true;
        self.reserved = None;
        Poll::Ready(Some(Err(status)))
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
            if let Err(status) = this.admit_next() {
                return this.fail(status);
            }
            match this.messages.next_message() {
                Ok(Some(mut message)) => {
                    this.reserved = None;
                    let bytes = message.copy_to_bytes(message.remaining());
                    let request = Req::decode(bytes)
                        .map_err(|e| Status::internal(format!("decoding a request: {e}")));
                    this.done = request.is_err();
                    return Poll::Ready(Some(request));
                }
                Ok(None) => {}
                Err(status) => return this.fail(status),
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
                    let gone = format!("the request stream broke: {}", broken.message());
                    return this.fail(Status::cancelled(gone));
                }
                None => {
                    this.done = true;
                    this.reserved = None;
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
    use crate::net::conn::RequestBudget;
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
        let requests: Vec<_> = Requests::<SotwRequest>::new(body(wire.clone()), 1 << 20, None)
            .collect()
            .await;
        let got: Vec<_> = requests.iter().map(|r| r.as_ref().unwrap()).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].head.response_nonce, "1-2");
        assert_eq!(got[1].names(), full().resource_names);
        // A body that ends inside a message: the requests before it, then the error.
        wire.truncate(wire.len() - 3);
        let requests: Vec<_> = Requests::<SotwRequest>::new(body(wire), 1 << 20, None)
            .collect()
            .await;
        assert_eq!(requests.len(), 2);
        assert!(requests[0].is_ok());
        let status = requests[1].as_ref().unwrap_err();
        assert!(status.message().contains("inside a message"), "{status:?}");
    }

    /// A body fed by the test: chunks sent on the channel arrive as data frames.
    fn fed() -> (
        tokio::sync::mpsc::Sender<Result<http_body::Frame<bytes::Bytes>, Status>>,
        Body,
    ) {
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        let frames = tokio_stream::wrappers::ReceiverStream::new(rx);
        (tx, Body::new(http_body_util::StreamBody::new(frames)))
    }

    fn data(bytes: &[u8]) -> Result<http_body::Frame<bytes::Bytes>, Status> {
        Ok(http_body::Frame::data(bytes::Bytes::copy_from_slice(bytes)))
    }

    /// Whether the stream has something to say now (without waiting for more data).
    fn poll_now(
        requests: &mut Requests<SotwRequest>,
    ) -> Option<Option<Result<SotwRequest, Status>>> {
        use futures::StreamExt;
        futures::FutureExt::now_or_never(requests.next())
    }

    #[tokio::test]
    async fn request_over_max_request_bytes_is_refused_before_buffering() {
        let (tx, body) = fed();
        let mut requests = Requests::<SotwRequest>::new(body, 1000, None);
        // A prefix announcing 59 MiB, and nothing else.
        tx.send(data(&[0, 0x03, 0xb0, 0, 0])).await.unwrap();
        let refused = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            use futures::StreamExt;
            requests.next().await
        });
        let status = refused.await.unwrap().unwrap().unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        let expected = "a request of 61865984 bytes is over the --max-request-bytes limit (1000)";
        assert_eq!(status.message(), expected);
    }

    #[tokio::test]
    async fn unfinished_requests_share_one_connection_budget() {
        let request = full().encode_to_vec();
        let mut wire = vec![0];
        wire.extend((request.len() as u32).to_be_bytes());
        wire.extend(&request);
        let budget = RequestBudget::new(request.len() + request.len() / 2);
        let (first_tx, first_body) = fed();
        let (second_tx, second_body) = fed();
        let mut first = Requests::<SotwRequest>::new(first_body, 1 << 20, Some(budget.clone()));
        let mut second = Requests::<SotwRequest>::new(second_body, 1 << 20, Some(budget.clone()));
        // The first stream's request is half in: it holds its whole length.
        first_tx.send(data(&wire[..10])).await.unwrap();
        assert!(poll_now(&mut first).is_none(), "waiting for the rest");
        assert_eq!(budget.available(), request.len() / 2);
        // The second's does not fit beside it: that stream ends, the first is untouched.
        second_tx.send(data(&wire[..10])).await.unwrap();
        let refused = poll_now(&mut second).unwrap().unwrap().unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused.message().contains("budget for unfinished requests"),
            "{refused:?}"
        );
        // The first completes and gives its reservation back; a third stream fits again.
        first_tx.send(data(&wire[10..])).await.unwrap();
        let got = poll_now(&mut first).unwrap().unwrap().unwrap();
        assert_eq!(got.names(), full().resource_names);
        assert_eq!(budget.available(), request.len() + request.len() / 2);
        let (third_tx, third_body) = fed();
        let mut third = Requests::<SotwRequest>::new(third_body, 1 << 20, Some(budget.clone()));
        third_tx.send(data(&wire)).await.unwrap();
        assert!(
            poll_now(&mut third).unwrap().unwrap().is_ok(),
            "a whole request needs no reservation"
        );
    }
}
