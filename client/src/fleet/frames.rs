//! gRPC messages read straight off an HTTP/2 response body, kept in the chunks they arrived in
//! (see [`xdsloop_proto::grpc_frames`]: no per-stream receive buffer).

use http_body_util::BodyExt;
use tonic::{Status, body::Body, codegen::http};
pub use xdsloop_proto::grpc_frames::Chunks;
use xdsloop_proto::grpc_frames::Messages;

/// Reads length-prefixed gRPC messages (uncompressed) and the final status from a response.
pub struct MessageReader {
    body: Body,
    messages: Messages,
    /// How the stream ended, once its trailers (or the end of the body) arrived.
    end: Option<Result<(), Status>>,
}

impl MessageReader {
    /// Checks the response head: an HTTP error or a trailers-only gRPC error is the `Err`.
    pub fn new(response: http::Response<Body>, max_message_bytes: usize) -> Result<Self, Status> {
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
    pub async fn message(&mut self) -> Result<Option<Chunks>, Status> {
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
