//! Everything a test server's streams did, from its start: a listener on the server's event
//! bus, subscribed before the first stream could open, so an await never misses what happened
//! before it was called.
//!
//! Reading drains the bus first, so "the requests so far" includes a request the server handled
//! a moment ago. A task wakes waiters as events arrive; it drains through the same listener,
//! under the same lock, so the order of events is the order streams sent them.

use std::sync::{Arc, Mutex, Weak};

use tokio::{sync::watch, task::JoinHandle};

use crate::{
    admin::registry::{
        Registry,
        bus::{Listener, Received},
    },
    protocol::facts::Capture,
    tap::WireEvent,
};

/// Events a journal keeps; later ones are counted as lost (the awaits then also read the
/// registry, see [`Kept::complete`]).
pub const MAX_EVENTS: usize = 100_000;

/// What the journal holds.
#[derive(Debug, Default)]
pub struct Kept {
    /// Every event since the server started, oldest first (at most [`MAX_EVENTS`]).
    pub events: Vec<Arc<WireEvent>>,
    /// Events the journal never got: it fell behind the bus, or was full.
    pub lost: u64,
}

impl Kept {
    /// Every event since the server started is here.
    pub fn complete(&self) -> bool {
        self.lost == 0
    }

    fn keep(&mut self, received: Received) {
        match received {
            Received::Event(_) if self.events.len() >= MAX_EVENTS => self.lost += 1,
            Received::Event(event) => self.events.push(event),
            Received::Gap { lost } => self.lost += lost,
        }
    }
}

#[derive(Debug)]
struct State {
    listener: Listener,
    kept: Kept,
}

/// Every event of a test server's streams, read from its bus from the moment it started: what the
/// awaits and [`super::TestServer::requests`] look through.
#[derive(Debug)]
pub struct Journal {
    state: Mutex<State>,
    /// Counts the events drained so far; waiters wait for it to change.
    drained: watch::Sender<u64>,
    waker: Mutex<Option<JoinHandle<()>>>,
}

impl Journal {
    /// Starts listening to `registry`'s bus; call it before the server accepts streams.
    pub fn start(registry: &Registry) -> Arc<Self> {
        let bus = registry.bus();
        let journal = Arc::new(Self {
            state: Mutex::new(State {
                listener: bus.listen(Capture::Full),
                kept: Kept::default(),
            }),
            drained: watch::Sender::new(0),
            waker: Mutex::new(None),
        });
        let waker = tokio::spawn(wake(Arc::downgrade(&journal), bus.listen(Capture::Full)));
        *journal.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(waker);
        journal
    }

    /// `look` at everything up to now: the bus is drained into the journal first.
    pub fn read<T>(&self, look: impl FnOnce(&Kept) -> T) -> T {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut drained = 0;
        while let Some(received) = state.listener.try_recv() {
            state.kept.keep(received);
            drained += 1;
        }
        if drained > 0 {
            self.drained.send_modify(|n| *n += drained);
        }
        look(&state.kept)
    }

    /// Changes whenever new events were drained.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.drained.subscribe()
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        let waker = self.waker.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(waker) = waker.take() {
            waker.abort();
        }
    }
}

/// Drains the journal each time its own listener hears the bus, until the journal is gone.
async fn wake(journal: Weak<Journal>, mut ear: Listener) {
    loop {
        let _ = ear.recv().await;
        let Some(journal) = journal.upgrade() else {
            return;
        };
        journal.read(|_| ());
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn event(stream: u64) -> Arc<WireEvent> {
        crate::test_support::closed_event(stream, 1)
    }

    #[tokio::test]
    async fn reading_drains_the_bus_in_order_and_waiters_are_woken() {
        let registry = Registry::new();
        let journal = Journal::start(&registry);
        let mut changes = journal.changes();
        registry.bus().send(event(1));
        registry.bus().send(event(2));
        // Read at once: the bus is drained by the read itself, not only by the task.
        let streams = journal.read(|kept| kept.events.iter().map(|e| e.stream).collect::<Vec<_>>());
        assert_eq!(streams, [1, 2]);
        changes.borrow_and_update();
        registry.bus().send(event(3));
        let woken = tokio::time::timeout(Duration::from_secs(10), changes.changed()).await;
        assert!(
            woken.is_ok(),
            "the task drains what arrives and wakes waiters"
        );
        assert!(journal.read(|kept| kept.complete() && kept.events.len() == 3));
    }

    #[test]
    fn a_gap_or_a_full_journal_counts_as_lost() {
        let mut kept = Kept::default();
        kept.keep(Received::Gap { lost: 2 });
        assert_eq!((kept.lost, kept.complete()), (2, false));
        let mut full = Kept {
            events: vec![event(1); MAX_EVENTS],
            lost: 0,
        };
        full.keep(Received::Event(event(2)));
        assert_eq!((full.events.len(), full.lost), (MAX_EVENTS, 1));
    }
}
