//! The server-wide event bus: every stream's events, for observers that want them all as they
//! happen (the recorder, tests awaiting an ACK, the live page's stream view).
//!
//! Nothing ever waits on a listener. The bus is a bounded `tokio::sync::broadcast`: a listener
//! that falls more than [`CAPACITY`] events behind loses the oldest and is told how many
//! ([`Received::Gap`]); streams never block. While nobody listens, a stream's whole cost is
//! one relaxed atomic load per message ([`Bus::capture`]): the broadcast's own receiver count
//! sits behind a lock, so the bus keeps its own.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use tokio::sync::broadcast;

use crate::tap::WireEvent;

use crate::protocol::facts::Capture;

/// Events a listener may fall behind before it loses some: a few seconds of a busy fleet's
/// messages, so a recorder writing to a slow disk loses nothing in bursts.
pub(crate) const CAPACITY: usize = 8192;

/// One server's event bus. Shared by the registry, so cheap to reach from every stream.
#[derive(Debug)]
pub struct Bus {
    sender: broadcast::Sender<Arc<WireEvent>>,
    /// Live [`Listener`]s, and those of them that want resource bodies.
    listeners: AtomicUsize,
    bodies: AtomicUsize,
}

impl Default for Bus {
    fn default() -> Self {
        Self {
            sender: broadcast::Sender::new(CAPACITY),
            listeners: AtomicUsize::new(0),
            bodies: AtomicUsize::new(0),
        }
    }
}

/// What a listener gets next.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// An event, in the order the server sent them.
    Event(Arc<WireEvent>),
    /// The listener fell behind and `lost` events are gone.
    Gap {
        /// How many events were dropped.
        lost: u64,
    },
}

impl Bus {
    /// How much of each message the listeners want, or `None` while there are none.
    pub fn capture(&self) -> Option<Capture> {
        if self.listeners.load(Ordering::Relaxed) == 0 {
            return None;
        }
        match self.bodies.load(Ordering::Relaxed) {
            0 => Some(Capture::Full),
            _ => Some(Capture::Bodies),
        }
    }

    /// A new listener, from now on. `capture` at [`Capture::Bodies`] asks for resources too.
    pub fn listen(self: &Arc<Self>, capture: Capture) -> Listener {
        let receiver = self.sender.subscribe();
        let bodies = capture == Capture::Bodies;
        self.listeners.fetch_add(1, Ordering::Relaxed);
        if bodies {
            self.bodies.fetch_add(1, Ordering::Relaxed);
        }
        Listener {
            receiver,
            bus: self.clone(),
            bodies,
        }
    }

    /// Hands `event` to every listener (none: it is dropped).
    pub(crate) fn send(&self, event: Arc<WireEvent>) {
        let _ = self.sender.send(event);
    }
}

/// A listener on the bus; dropping it stops the events (and their cost) once it was the last.
#[derive(Debug)]
pub struct Listener {
    receiver: broadcast::Receiver<Arc<WireEvent>>,
    bus: Arc<Bus>,
    bodies: bool,
}

impl Listener {
    /// The next event or gap. Never ends: the listener keeps the bus alive.
    pub async fn recv(&mut self) -> Received {
        match self.receiver.recv().await {
            Ok(event) => Received::Event(event),
            Err(broadcast::error::RecvError::Lagged(lost)) => Received::Gap { lost },
            // The listener holds the sender (through the bus), so it cannot close.
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }

    /// The next event or gap if one is waiting, without waiting.
    pub fn try_recv(&mut self) -> Option<Received> {
        match self.receiver.try_recv() {
            Ok(event) => Some(Received::Event(event)),
            Err(broadcast::error::TryRecvError::Lagged(lost)) => Some(Received::Gap { lost }),
            Err(_) => None,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.bus.listeners.fetch_sub(1, Ordering::Relaxed);
        if self.bodies {
            self.bus.bodies.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn event(seq: u32) -> Arc<WireEvent> {
        crate::test_support::closed_event(1, seq)
    }

    #[test]
    fn capture_follows_the_listeners_and_what_they_asked_for() {
        let bus = Arc::new(Bus::default());
        assert_eq!(bus.capture(), None, "nobody listens: streams build nothing");
        let full = bus.listen(Capture::Full);
        assert_eq!(bus.capture(), Some(Capture::Full));
        let bodies = bus.listen(Capture::Bodies);
        assert_eq!(bus.capture(), Some(Capture::Bodies));
        drop(bodies);
        assert_eq!(bus.capture(), Some(Capture::Full));
        drop(full);
        assert_eq!(bus.capture(), None);
    }

    #[tokio::test]
    async fn a_lagging_listener_gets_a_gap_and_then_the_newest_events() {
        let bus = Arc::new(Bus::default());
        let mut listener = bus.listen(Capture::Full);
        let extra = 5;
        for seq in 0..(CAPACITY + extra) as u32 {
            bus.send(event(seq));
        }
        assert_eq!(listener.recv().await, Received::Gap { lost: extra as u64 });
        let Received::Event(next) = listener.recv().await else {
            panic!("an event after the gap");
        };
        assert_eq!(next.seq, extra as u32, "the oldest kept event");
    }
}
