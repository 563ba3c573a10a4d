//! Closing every accepted connection at once, when a shutdown's grace period is over.
//!
//! Each connection runs in a task of its own (hyper's), which outlives the accept loop. A
//! client that stopped reading keeps its connection's task waiting for the socket to drain,
//! with the socket and the undelivered responses, for as long as the runtime runs: forever in
//! a test or a program that embeds the server. [`Closer::close`] makes every connection's reads
//! and writes fail, so its task ends and drops them.
//!
//! The same flag is each connection's own kill switch ([`KillSwitch`]): a scenario rule's
//! `reset: { scope: connection }` fails that one connection, marked as a reset so the
//! connection closes with zero linger and the peer sees a TCP RST, not a clean FIN.
//!
//! A connection registers its waker only when its socket has nothing to do (a read or write
//! returned `Pending`), under a lock of its own: the hot path is one atomic load.

use std::{
    collections::HashMap,
    io,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Waker},
};

/// Closes the connections it handed out a [`CloseSignal`]. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Closer {
    inner: Arc<Mutex<Registered>>,
}

#[derive(Debug, Default)]
struct Registered {
    closed: bool,
    next: u64,
    open: HashMap<u64, Arc<Flag>>,
}

#[derive(Debug, Default)]
struct Flag {
    closed: AtomicBool,
    /// Closed by its [`KillSwitch`]: end with a reset rather than a FIN.
    reset: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Flag {
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(waker) = lock(&self.waker).take() {
            waker.wake();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data behind the lock: a panic elsewhere leaves it usable.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Closer {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A signal for one new connection; already closed if [`Closer::close`] ran.
    pub(crate) fn signal(&self) -> CloseSignal {
        let mut registered = lock(&self.inner);
        let flag = Arc::new(Flag::default());
        if registered.closed {
            flag.closed.store(true, Ordering::Release);
        }
        let id = registered.next;
        registered.next += 1;
        registered.open.insert(id, flag.clone());
        CloseSignal {
            closer: self.clone(),
            id,
            flag,
        }
    }

    /// Makes every registered connection's reads and writes fail from now on, and wakes its
    /// task so it notices.
    pub(crate) fn close(&self) {
        let flags: Vec<Arc<Flag>> = {
            let mut registered = lock(&self.inner);
            registered.closed = true;
            registered.open.values().cloned().collect()
        };
        for flag in flags {
            flag.close();
        }
    }

    /// Makes the connections registered now fail, as [`Closer::close`] does, but not the ones
    /// that come later (an outage on purpose: the server serves again after it). Returns how
    /// many it closed.
    pub(crate) fn close_open(&self) -> usize {
        let flags: Vec<Arc<Flag>> = lock(&self.inner).open.values().cloned().collect();
        for flag in &flags {
            flag.close();
        }
        flags.len()
    }

    /// Connections still registered (open, or not yet dropped).
    pub(crate) fn open(&self) -> usize {
        lock(&self.inner).open.len()
    }
}

/// One connection's view of its [`Closer`]; dropping it unregisters the connection.
#[derive(Debug)]
pub(crate) struct CloseSignal {
    closer: Closer,
    id: u64,
    flag: Arc<Flag>,
}

impl CloseSignal {
    /// This connection's own kill switch, for the streams it carries.
    pub(crate) fn kill_switch(&self) -> KillSwitch {
        KillSwitch {
            flag: Some(self.flag.clone()),
        }
    }

    /// Whether the connection was closed by its [`KillSwitch`].
    pub(crate) fn is_reset(&self) -> bool {
        self.flag.reset.load(Ordering::Acquire)
    }

    /// The error every read and write returns once closed.
    pub(crate) fn check(&self) -> io::Result<()> {
        if self.is_reset() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "a scenario rule reset the connection",
            ));
        }
        if self.flag.closed.load(Ordering::Acquire) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the server closed the connection at shutdown",
            ));
        }
        Ok(())
    }

    /// Called when the socket returned `Pending`: wake this task on close too. Checks again
    /// after registering, so a close in between is not missed.
    pub(crate) fn register(&self, cx: &Context<'_>) -> io::Result<()> {
        {
            let mut waker = lock(&self.flag.waker);
            match &*waker {
                Some(known) if known.will_wake(cx.waker()) => {}
                _ => *waker = Some(cx.waker().clone()),
            }
        }
        self.check()
    }
}

/// Resets one connection (every stream on it) at once. Cheap to clone; a detached one (a
/// connection that is not ours: tests, embedders) does nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct KillSwitch {
    flag: Option<Arc<Flag>>,
}

impl KillSwitch {
    /// Fails the connection's reads and writes from now on, as a reset; `false` when detached.
    pub(crate) fn reset(&self) -> bool {
        let Some(flag) = &self.flag else {
            return false;
        };
        flag.reset.store(true, Ordering::Release);
        flag.close();
        true
    }
}

impl Drop for CloseSignal {
    fn drop(&mut self) {
        lock(&self.closer.inner).open.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    use super::*;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn close_fails_every_signal_and_wakes_the_waiting_ones() {
        let closer = Closer::new();
        let (waiting, idle) = (closer.signal(), closer.signal());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        waiting.register(&Context::from_waker(&waker)).unwrap();
        assert!(idle.check().is_ok());
        assert_eq!(closer.open(), 2);
        closer.close();
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            1,
            "the waiting task is woken"
        );
        for signal in [&waiting, &idle] {
            let error = signal.check().unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::ConnectionAborted);
        }
        assert!(closer.signal().check().is_err(), "later ones start closed");
        drop((waiting, idle));
        assert_eq!(closer.open(), 0, "dropped signals unregister");
    }

    #[test]
    fn close_open_fails_the_open_connections_but_not_later_ones() {
        let closer = Closer::new();
        let open = closer.signal();
        assert_eq!(closer.close_open(), 1);
        assert_eq!(
            open.check().unwrap_err().kind(),
            io::ErrorKind::ConnectionAborted
        );
        assert!(closer.signal().check().is_ok(), "a later one is served");
    }

    #[test]
    fn a_kill_switch_resets_only_its_own_connection() {
        let closer = Closer::new();
        let (killed, other) = (closer.signal(), closer.signal());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        killed.register(&Context::from_waker(&waker)).unwrap();
        assert!(killed.kill_switch().reset());
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "its task is woken");
        let error = killed.check().unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionReset);
        assert!(killed.is_reset());
        assert!(
            other.check().is_ok() && !other.is_reset(),
            "others stay open"
        );
        assert!(
            !KillSwitch::default().reset(),
            "a detached switch does nothing"
        );
    }
}
