//! The node book: what the judge remembers of a node's streams across streams, for the rules
//! that span a reconnect (C10 backoff, C11 resubscription). Pure data; the server keeps one
//! behind a mutex, touched when a stream names its node and when it closes, never per message.
//!
//! Bounded: at most [`MAX_ENTRIES`] keys per table, the oldest dropped first, and an entry
//! untouched for [`EXPIRY`] is forgotten, so a fleet cycling through node ids or ports cannot
//! grow server memory.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    hash::Hash,
    time::{Duration, Instant},
};

/// Keys remembered per table.
pub(crate) const MAX_ENTRIES: usize = 10_000;
/// How long an entry is kept after it was last touched.
pub(crate) const EXPIRY: Duration = Duration::from_secs(600);
/// Delta resources remembered per type for C11; a type holding more is not judged by version.
pub(crate) const MAX_KNOWN: usize = 10_000;

/// Where a stream came from, as text (the transport knows the socket).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Peer {
    /// `ip:port`: one connection, so one client process.
    pub addr: Box<str>,
    /// The IP alone: every connection of one host.
    pub ip: Box<str>,
}

/// (node, peer address or IP, service).
pub(crate) type Key = (String, Box<str>, &'static str);

/// A bounded map with insertion-order eviction and expiry.
#[derive(Debug)]
pub(crate) struct Book<V> {
    entries: HashMap<Key, (Instant, V)>,
    order: VecDeque<Key>,
}

impl<V> Default for Book<V> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<V: Default> Book<V> {
    /// The entry for `key`, created empty if new, marked as touched at `now`.
    pub(crate) fn touch(&mut self, key: Key, now: Instant) -> &mut V {
        self.expire(now);
        if !self.entries.contains_key(&key) {
            self.order.push_back(key.clone());
        }
        let entry = self
            .entries
            .entry(key)
            .or_insert_with(|| (now, V::default()));
        entry.0 = now;
        &mut entry.1
    }

    /// Removes and returns the entry for `key`.
    pub(crate) fn take(&mut self, key: &Key) -> Option<V> {
        self.entries.remove(key).map(|(_, v)| v)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    fn expire(&mut self, now: Instant) {
        while let Some(front) = self.order.front() {
            let stale = match self.entries.get(front) {
                None => true,
                Some((at, _)) => now.saturating_duration_since(*at) > EXPIRY,
            };
            if !stale && self.entries.len() < MAX_ENTRIES {
                break;
            }
            let key = self.order.pop_front().expect("front exists");
            self.entries.remove(&key);
        }
    }
}

/// C10: a key's recent opens that followed a stream that got no response.
#[derive(Debug, Default)]
pub(crate) struct Opens {
    /// The key's last stream closed without a response.
    pub last_unserved: bool,
    /// When the recent failing opens happened, oldest first.
    pub failing: VecDeque<Instant>,
}

/// C11: what a connection's last stream left its client holding.
#[derive(Debug, Default)]
pub(crate) struct LastStream {
    pub stream: u64,
    /// By type URL.
    pub types: BTreeMap<String, HeldType>,
}

/// One type the client held when its stream closed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct HeldType {
    /// The client still wanted something of it.
    pub wanted: bool,
    /// The last response was ACKed, with this version (SotW `version_info`).
    pub acked: Option<String>,
    /// Delta: the versions ACKed, by name (`None`: too many to keep).
    pub known: Option<BTreeMap<String, String>>,
}

/// Everything the judge remembers across streams.
#[derive(Debug, Default)]
pub(crate) struct NodeBook {
    /// By (node, peer IP, service).
    pub opens: Book<Opens>,
    /// By (node, peer address, service).
    pub last: Book<LastStream>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: usize) -> Key {
        (format!("n{n}"), "127.0.0.1:1".into(), "ads")
    }

    #[test]
    fn the_book_keeps_at_most_max_entries_oldest_out_first() {
        let mut book: Book<Opens> = Book::default();
        let now = Instant::now();
        for n in 0..MAX_ENTRIES + 3 {
            book.touch(key(n), now);
        }
        assert_eq!(book.len(), MAX_ENTRIES);
        assert!(book.take(&key(0)).is_none());
        assert!(book.take(&key(MAX_ENTRIES + 2)).is_some());
    }

    #[test]
    fn entries_untouched_for_the_expiry_are_forgotten() {
        let mut book: Book<Opens> = Book::default();
        let t0 = Instant::now();
        book.touch(key(1), t0).last_unserved = true;
        book.touch(key(2), t0 + EXPIRY);
        assert!(book.touch(key(2), t0 + EXPIRY).failing.is_empty());
        book.touch(key(3), t0 + EXPIRY + Duration::from_secs(1));
        assert!(book.take(&key(1)).is_none(), "expired");
        assert!(book.take(&key(2)).is_some());
    }
}
