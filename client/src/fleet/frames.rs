//! gRPC messages read straight off an HTTP/2 response body, kept in the chunks they arrived in.
//!
//! tonic's `Streaming` copies every message into a per-stream buffer that keeps the capacity
//! of the largest message for the life of the stream: ~400 KiB per node for 1,000 endpoint
//! resources, so a 5,000-node fleet touched (and the kernel zeroed) gigabytes of fresh pages
//! and copied every byte once more. Here a message is the list of HTTP/2 data chunks that
//! carried it ([`Chunks`], a [`Buf`] prost decodes from); a field inside one chunk is a slice
//! of it, and nothing outlives the message.

use std::{collections::VecDeque, io::IoSlice};

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use tonic::{Status, body::Body, codegen::http};

/// A byte sequence made of shared chunks.
#[derive(Debug, Default)]
pub struct Chunks {
    chunks: VecDeque<Bytes>,
    remaining: usize,
}

impl Chunks {
    fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.remaining += chunk.len();
            self.chunks.push_back(chunk);
        }
    }

    /// Moves the first `len` bytes out (whole chunks moved, the boundary chunk split).
    fn split_front(&mut self, mut len: usize) -> Chunks {
        let mut out = Chunks::default();
        while len > 0 {
            let Some(front) = self.chunks.front_mut() else {
                break;
            };
            let piece = if front.len() <= len {
                self.chunks.pop_front().unwrap_or_default()
            } else {
                front.split_to(len)
            };
            len -= piece.len();
            self.remaining -= piece.len();
            out.push(piece);
        }
        out
    }

    /// The first `N` bytes, if there are that many, without consuming them.
    fn peek<const N: usize>(&self) -> Option<[u8; N]> {
        if self.remaining < N {
            return None;
        }
        let mut out = [0; N];
        let bytes = self.chunks.iter().flat_map(|c| c.iter());
        out.iter_mut().zip(bytes).for_each(|(o, b)| *o = *b);
        Some(out)
    }
}

impl Buf for Chunks {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.chunks.front().map_or(&[], |c| c.as_ref())
    }

    /// Every chunk (up to `dst.len()`), so a reader can parse them in place.
    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let pairs = dst.iter_mut().zip(&self.chunks);
        pairs
            .map(|(slot, chunk)| *slot = IoSlice::new(chunk))
            .count()
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "advance past the end");
        self.remaining -= cnt;
        while cnt > 0 {
            let Some(front) = self.chunks.front_mut() else {
                return;
            };
            if front.len() > cnt {
                front.advance(cnt);
                return;
            }
            cnt -= front.len();
            self.chunks.pop_front();
        }
    }

    /// A slice of the chunk when the bytes lie within one, else a copy.
    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        assert!(len <= self.remaining, "copy_to_bytes past the end");
        match self.chunks.front_mut() {
            Some(front) if front.len() > len => {
                self.remaining -= len;
                front.split_to(len)
            }
            _ => {
                let mut out = BytesMut::with_capacity(len);
                for chunk in self.split_front(len).chunks {
                    out.extend_from_slice(&chunk);
                }
                out.freeze()
            }
        }
    }
}

/// Reads length-prefixed gRPC messages (uncompressed) and the final status from a response.
pub struct MessageReader {
    body: Body,
    pending: Chunks,
    max_message_bytes: usize,
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
            pending: Chunks::default(),
            max_message_bytes,
            end: None,
        })
    }

    /// The next message; `Ok(None)` once the server ended the stream with status OK.
    pub async fn message(&mut self) -> Result<Option<Chunks>, Status> {
        loop {
            if let Some(message) = self.split_message()? {
                return Ok(Some(message));
            }
            if let Some(end) = &self.end {
                if self.pending.remaining() > 0 {
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
                Ok(data) => self.pending.push(data),
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

    fn split_message(&mut self) -> Result<Option<Chunks>, Status> {
        let Some([flag, a, b, c, d]) = self.pending.peek::<5>() else {
            return Ok(None);
        };
        if flag != 0 {
            return Err(Status::internal("compressed responses are not supported"));
        }
        let len = u32::from_be_bytes([a, b, c, d]) as usize;
        if len > self.max_message_bytes {
            return Err(Status::out_of_range(format!(
                "a response of {len} bytes is over the {}-byte limit",
                self.max_message_bytes
            )));
        }
        if self.pending.remaining() < 5 + len {
            return Ok(None);
        }
        self.pending.advance(5);
        Ok(Some(self.pending.split_front(len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&[u8]]) -> Chunks {
        let mut out = Chunks::default();
        parts
            .iter()
            .for_each(|p| out.push(Bytes::copy_from_slice(p)));
        out
    }

    #[test]
    fn reads_across_chunk_boundaries_and_slices_within_one() {
        let mut c = chunks(&[b"abc", b"defgh", b"ij"]);
        assert_eq!(c.peek::<4>(), Some(*b"abcd"));
        assert_eq!(c.copy_to_bytes(2), Bytes::from_static(b"ab"));
        assert_eq!(c.copy_to_bytes(3), Bytes::from_static(b"cde"));
        let mut rest = c.split_front(4);
        assert_eq!(c.remaining(), 1);
        assert_eq!(rest.copy_to_bytes(4), Bytes::from_static(b"fghi"));
        c.advance(1);
        assert_eq!((c.remaining(), c.chunk()), (0, &b""[..]));
    }

    #[test]
    fn prost_decodes_a_message_split_over_many_chunks() {
        use prost::Message;
        use xdsloop_proto::discovery::DiscoveryResponse;
        let message = DiscoveryResponse {
            version_info: "v1".into(),
            nonce: "n".repeat(100),
            ..Default::default()
        };
        let bytes = message.encode_to_vec();
        let parts: Vec<&[u8]> = bytes.chunks(7).collect();
        assert_eq!(DiscoveryResponse::decode(chunks(&parts)).unwrap(), message);
    }
}
