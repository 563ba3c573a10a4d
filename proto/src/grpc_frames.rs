//! Length-prefixed gRPC messages over HTTP/2 data chunks, sans-I/O: feed the chunks a body
//! yields, take whole messages out.
//!
//! tonic's `Streaming` copies every message into a per-stream buffer that keeps the capacity
//! of the largest message for the life of the stream. With thousands of streams that is most
//! of a process's memory (the fleet receives every endpoint resource per node; the server
//! receives every name list per ACK), and the kernel zeroes every fresh page of it. Here a
//! message is the list of HTTP/2 data chunks that carried it ([`Chunks`], a [`Buf`] prost
//! decodes from); a field inside one chunk is a slice of it, and nothing outlives the message.

use std::{collections::VecDeque, io::IoSlice};

use bytes::{Buf, Bytes, BytesMut};
use tonic::Status;

/// A byte sequence made of shared chunks.
#[derive(Debug, Default)]
pub struct Chunks {
    chunks: VecDeque<Bytes>,
    remaining: usize,
}

impl Chunks {
    /// Appends a chunk at the end, shared rather than copied; empty chunks are dropped.
    pub fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.remaining += chunk.len();
            self.chunks.push_back(chunk);
        }
    }

    /// Moves the first `len` bytes out (whole chunks moved, the boundary chunk split).
    pub fn split_front(&mut self, mut len: usize) -> Chunks {
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
    pub fn peek<const N: usize>(&self) -> Option<[u8; N]> {
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

/// Splits gRPC messages (5-byte prefix: compression flag, big-endian length) out of the
/// chunks pushed in. `what` names the messages in errors ("request", "response").
#[derive(Debug)]
pub struct Messages {
    pending: Chunks,
    max_message_bytes: usize,
    what: &'static str,
}

impl Messages {
    /// A splitter that refuses messages over `max_message_bytes` (the prefix not counted).
    pub fn new(max_message_bytes: usize, what: &'static str) -> Self {
        Self {
            pending: Chunks::default(),
            max_message_bytes,
            what,
        }
    }

    /// Adds the next HTTP/2 data chunk of the body.
    pub fn push(&mut self, chunk: Bytes) {
        self.pending.push(chunk);
    }

    /// Bytes received that are not part of a message taken out yet.
    pub fn pending(&self) -> usize {
        self.pending.remaining()
    }

    /// The length of the next message, once its 5-byte prefix has arrived (the message
    /// itself may not have).
    pub fn next_len(&self) -> Option<usize> {
        let [_, a, b, c, d] = self.pending.peek::<5>()?;
        Some(u32::from_be_bytes([a, b, c, d]) as usize)
    }

    /// The next whole message, if it has arrived. A compressed message or one over the limit
    /// (`OUT_OF_RANGE`, as tonic answers) is an error; the stream cannot go on after it.
    pub fn next_message(&mut self) -> Result<Option<Chunks>, Status> {
        let Some([flag, a, b, c, d]) = self.pending.peek::<5>() else {
            return Ok(None);
        };
        if flag != 0 {
            let what = self.what;
            return Err(Status::internal(format!(
                "compressed {what}s are not supported"
            )));
        }
        let len = u32::from_be_bytes([a, b, c, d]) as usize;
        if len > self.max_message_bytes {
            return Err(Status::out_of_range(format!(
                "a {} of {len} bytes is over the {}-byte limit",
                self.what, self.max_message_bytes
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
    fn messages_come_out_whole_whatever_the_chunking() {
        let framed = |body: &[u8]| {
            let mut m = vec![0];
            m.extend((body.len() as u32).to_be_bytes());
            m.extend(body);
            m
        };
        let mut wire = framed(b"first");
        wire.extend(framed(b""));
        wire.extend(framed(b"third message"));
        for size in [1, 2, 5, 7, 100] {
            let mut messages = Messages::new(64, "request");
            let mut got = Vec::new();
            for piece in wire.chunks(size) {
                messages.push(Bytes::copy_from_slice(piece));
                while let Some(mut m) = messages.next_message().unwrap() {
                    got.push(m.copy_to_bytes(m.remaining()));
                }
            }
            assert_eq!(
                got,
                [&b"first"[..], b"", b"third message"],
                "chunks of {size}"
            );
            assert_eq!(messages.pending(), 0);
        }
    }

    #[test]
    fn compressed_and_oversized_messages_are_refused() {
        let mut messages = Messages::new(4, "request");
        messages.push(Bytes::from_static(&[1, 0, 0, 0, 1, 9]));
        let status = messages.next_message().unwrap_err();
        assert!(
            status.message().contains("compressed requests"),
            "{status:?}"
        );
        let mut messages = Messages::new(4, "response");
        messages.push(Bytes::from_static(&[0, 0, 0, 0]));
        assert_eq!(messages.next_len(), None, "the prefix is not complete");
        messages.push(Bytes::from_static(&[5]));
        assert_eq!(messages.next_len(), Some(5));
        let status = messages.next_message().unwrap_err();
        assert_eq!(status.code(), tonic::Code::OutOfRange);
        assert!(
            status.message().contains("a response of 5 bytes"),
            "{status:?}"
        );
    }

    #[test]
    fn prost_decodes_a_message_split_over_many_chunks() {
        use crate::discovery::DiscoveryResponse;
        use prost::Message;
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
