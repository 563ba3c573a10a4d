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
    protocol::tap::{Capture, WireEvent},
};

/// Events a journal keeps; later ones are counted as lost (the awaits then also read the
/// registry, see [`Kept::complete`]).
pub const MAX_EVENTS: usize = 100_000;

/// What the journal holds.
#[derive(Debug, Default)]
pub struct Kept {
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
