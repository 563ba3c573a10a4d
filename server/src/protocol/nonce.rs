//! Response nonces. The xDS protocol only needs a nonce to be unique per response on one
//! stream (S1); prefixing the stream id also makes nonces unique across the whole server, so a
//! client that wrongly echoes a nonce from a previous stream can never match a live one, and a
//! nonce in a log line names its stream.

/// Hands out `"<stream id>-<counter>"` nonces for one stream.
#[derive(Debug, Clone)]
pub(crate) struct NonceSource {
    stream_id: u64,
    next: u64,
}

impl NonceSource {
    pub(crate) fn new(stream_id: u64) -> Self {
        Self { stream_id, next: 1 }
    }

    /// A nonce never returned before by this source.
    pub(crate) fn next_nonce(&mut self) -> String {
        let nonce = format!("{}-{}", self.stream_id, self.next);
        self.next += 1;
        nonce
    }

    /// How many nonces this source has handed out.
    pub(crate) fn issued(&self) -> u64 {
        self.next - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_unique_and_name_their_stream() {
        let mut a = NonceSource::new(7);
        let first = a.next_nonce();
        let second = a.next_nonce();
        assert_ne!(first, second);
        assert_eq!(a.issued(), 2);
        assert!(first.starts_with("7-"));
        assert_ne!(
            NonceSource::new(8).next_nonce(),
            NonceSource::new(7).next_nonce()
        );
    }
}
