//! `--replay FILE`: a recorded server side served again to a new client, so a bug report's
//! transcript reproduces offline (docs/transcripts.md).
//!
//! [`ReplayStream`] is a [`StreamMachine`](crate::protocol::machine::StreamMachine) like the
//! SotW and Delta ones, driven by the same stream loop: at its first request a stream is bound
//! to the next recorded stream of the same node and transport that no stream has taken yet;
//! each request must then be the next one recorded for its type (type, nonce, ACK or NACK,
//! version and names; the order across types is the client's timing and is not checked), and
//! the responses recorded after it are sent as they were, nonces included, so the client
//! echoes them. A request that differs ends the stream with `FAILED_PRECONDITION` naming the
//! recording's line, what it expected and what came. Once every recorded request has arrived,
//! a stream the recorded server ended with a status is ended the same way; otherwise it idles.
//! [`Replay`] is what all streams share: the script and how far it got, for `/status`;
//! [`script`] reads the recording and checks it at start-up.

mod flavor;
pub(crate) mod script;
mod stream;

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::replay::script::Script;

pub(crate) use flavor::{Delta, Flavor, Sotw};
pub(crate) use stream::ReplayStream;

/// The loaded recording and how far the replay got.
#[derive(Debug)]
pub struct Replay {
    script: Script,
    /// `--replay-timing`: each response waits as long after its request as it did recorded.
    timed: bool,
    progress: Mutex<Progress>,
}

#[derive(Debug, Default)]
struct Progress {
    /// Per recorded stream: a client's stream has been bound to it.
    bound: Vec<bool>,
    matched: usize,
    failures: usize,
    error: Option<Failure>,
}

/// `/status` `replay`: how far the replay got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayView {
    /// The recording served (`--replay FILE`).
    pub file: String,
    /// Recorded streams, and how many of them a client's stream replays (or replayed).
    pub streams: usize,
    /// Recorded streams a client's stream was bound to.
    pub bound: usize,
    /// Requests in the recording, and how many arrived as recorded.
    pub requests: usize,
    /// Requests that arrived as recorded.
    pub matched: usize,
    /// Streams ended because a request was not the recorded one (or no recorded stream was
    /// left for them), and the first of them: where the client first strayed.
    pub failures: usize,
    /// The first failure.
    pub error: Option<Failure>,
}

/// A stream the replay ended: where in the recording, and what the client was told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The recording's line of the request that was expected (none when no recorded stream
    /// could be bound).
    pub line: Option<usize>,
    /// What the client was told (the FAILED_PRECONDITION message).
    pub message: String,
}

impl Replay {
    #[cfg(test)]
    /// Responses go out as soon as their request arrived.
    pub(crate) fn new(script: Script) -> Self {
        Self::with_timing(script, false)
    }

    /// With `timed`, each response waits as long after its request as it did when recorded.
    pub(crate) fn with_timing(script: Script, timed: bool) -> Self {
        let progress = Progress {
            bound: vec![false; script.streams.len()],
            ..Progress::default()
        };
        Self {
            script,
            timed,
            progress: Mutex::new(progress),
        }
    }

    pub(crate) fn script(&self) -> &Script {
        &self.script
    }

    /// Responses wait as long after their request as they did when recorded (`--replay-timing`).
    pub fn timed(&self) -> bool {
        self.timed
    }

    /// How far the replay got, as `/status` shows it.
    pub fn view(&self) -> ReplayView {
        let progress = self.progress();
        ReplayView {
            file: self.script.file.clone(),
            streams: self.script.streams.len(),
            bound: progress.bound.iter().filter(|b| **b).count(),
            requests: self.script.streams.iter().map(|s| s.requests()).sum(),
            matched: progress.matched,
            failures: progress.failures,
            error: progress.error.clone(),
        }
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        // Progress is counters and a message: one left half-written by a panic is still fine.
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next recorded stream of `node` on `transport` that no stream has taken, now taken.
    fn bind(&self, node: &str, transport: &str) -> Result<usize, String> {
        let mut progress = self.progress();
        let candidates: Vec<usize> = (self.script.streams.iter().enumerate())
            .filter(|(_, s)| s.node == node && (s.transport.is_empty() || s.transport == transport))
            .map(|(i, _)| i)
            .collect();
        if let Some(&free) = candidates.iter().find(|&&i| !progress.bound[i]) {
            progress.bound[free] = true;
            return Ok(free);
        }
        let file = &self.script.file;
        Err(match candidates.len() {
            0 => format!(
                "replay: {file} has no {transport} stream of node \"{node}\" (it has {})",
                self.recorded_streams()
            ),
            n => format!(
                "replay: no recorded stream left for node \"{node}\" on {transport} \
                 (the recording has {n}, all replayed already)"
            ),
        })
    }

    /// The recorded streams as `node on transport`, for a message.
    fn recorded_streams(&self) -> String {
        let streams = self.script.streams.iter();
        let all: Vec<String> = streams
            .map(|s| format!("\"{}\" on {}", s.node, s.transport))
            .collect();
        all.join(", ")
    }

    fn matched(&self) {
        self.progress().matched += 1;
    }

    fn failed(&self, failure: Failure) {
        let mut progress = self.progress();
        progress.failures += 1;
        progress.error.get_or_insert(failure);
    }
}

#[cfg(test)]
mod tests;
