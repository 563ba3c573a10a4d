//! A server-sent-events reader over a plain HTTP/1.1 connection, as a browser's `EventSource`
//! reads the live page's streams: one request, then `event:`/`data:` blocks in a chunked body.

use std::net::SocketAddr;

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpStream,
};

use super::within;

/// One open event stream.
pub(crate) struct Sse {
    reader: BufReader<TcpStream>,
    /// Body bytes read but not yet split into events.
    pending: String,
}

/// One event: its name and its `data` as JSON.
#[derive(Debug, Clone)]
pub(crate) struct SseEvent {
    pub name: String,
    pub data: Value,
}

impl Sse {
    /// `GET path` with `Accept: text/event-stream`; fails unless the answer is an event stream.
    pub(crate) async fn open(addr: SocketAddr, path: &str) -> Self {
        within("the event stream's headers", async {
            let mut stream = TcpStream::connect(addr).await.expect("connects");
            let request =
                format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
            stream.write_all(request.as_bytes()).await.expect("sends");
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).await.expect("reads headers");
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                head.push_str(&line);
            }
            assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
            assert!(head.contains("text/event-stream"), "{path}: {head}");
            Self {
                reader,
                pending: String::new(),
            }
        })
        .await
    }

    /// The next event (keep-alive comments skipped).
    pub(crate) async fn next(&mut self) -> SseEvent {
        within("the next server-sent event", async {
            loop {
                if let Some(event) = self.split() {
                    return event;
                }
                self.read_chunk().await;
            }
        })
        .await
    }

    /// Events until one satisfies `check`, which is returned; fails after the harness timeout.
    pub(crate) async fn until(
        &mut self,
        what: &str,
        check: impl Fn(&SseEvent) -> bool,
    ) -> SseEvent {
        within(what, async {
            loop {
                let event = self.next().await;
                if check(&event) {
                    return event;
                }
            }
        })
        .await
    }

    fn split(&mut self) -> Option<SseEvent> {
        loop {
            let end = self.pending.find("\n\n")?;
            let block: String = self.pending.drain(..end + 2).collect();
            let (mut name, mut data) = (String::from("message"), String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim().to_string();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if data.is_empty() {
                continue; // a comment (keep-alive)
            }
            let data = serde_json::from_str(&data)
                .unwrap_or_else(|e| panic!("event {name}: data is not JSON ({e}): {data}"));
            return Some(SseEvent { name, data });
        }
    }

    async fn read_chunk(&mut self) {
        let mut size = String::new();
        self.reader.read_line(&mut size).await.expect("reads");
        let size = usize::from_str_radix(size.trim(), 16)
            .unwrap_or_else(|_| panic!("chunk size expected, got {size:?}"));
        assert!(size > 0, "the server ended the event stream");
        let mut chunk = vec![0; size + 2];
        self.reader.read_exact(&mut chunk).await.expect("reads");
        chunk.truncate(size);
        self.pending
            .push_str(&String::from_utf8(chunk).expect("UTF-8"));
    }
}
