//! The grid's model task: it runs only while a page is open, rebuilds the [`PageModel`] at
//! most [`TICK`] apart and only when something changed (a stream published, the snapshot or
//! the reload moved), and publishes it on a `watch` channel. Every page connection reads the
//! latest model when it is ready to send, so a slow browser skips models instead of queueing
//! them, and the xDS streams never wait for the page: they only bump the registry's
//! generation, which they do anyway.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::watch;

use super::{Sources, model::PageModel};

/// The fastest the grid moves: four times a second is live to a reader and, with 1,000
/// streams, a few milliseconds of CPU a second.
pub(crate) const TICK: Duration = Duration::from_millis(250);

/// Starts the model task with the first page and stops it after the last. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hub {
    running: Arc<Mutex<Option<watch::Sender<Arc<PageModel>>>>>,
}

/// What the model was last built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    streams: u64,
    snapshot: u64,
    reloads: u64,
    reload_ok: bool,
    /// The scenario in force and the firings of its rules.
    scenario: (u64, u64),
}

impl Hub {
    /// The latest model and its updates; starts the task if no page was open.
    pub(crate) fn subscribe(&self, sources: &Sources) -> watch::Receiver<Arc<PageModel>> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sender) = running.as_ref() {
            return sender.subscribe();
        }
        let (stamp, model) = build(sources, 1);
        let (sender, receiver) = watch::channel(Arc::new(model));
        *running = Some(sender.clone());
        tokio::spawn(run(self.clone(), sources.clone(), sender, stamp));
        receiver
    }

    #[cfg(test)]
    /// Whether a model task runs (a page is open).
    pub(crate) fn is_running(&self) -> bool {
        self.running.lock().map(|r| r.is_some()).unwrap_or(false)
    }
}

async fn run(hub: Hub, sources: Sources, sender: watch::Sender<Arc<PageModel>>, mut stamp: Stamp) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut generation = 1;
    loop {
        tick.tick().await;
        {
            // Decided under the hub's lock, so a page subscribing now either finds this task
            // still running or starts a new one.
            let mut running = hub.running.lock().unwrap_or_else(|e| e.into_inner());
            if sender.receiver_count() == 0 {
                *running = None;
                return;
            }
        }
        if current_stamp(&sources) == stamp {
            continue;
        }
        generation += 1;
        let from = sources.clone();
        // Thousands of streams make this milliseconds of CPU: off the runtime's threads.
        let built = tokio::task::spawn_blocking(move || build(&from, generation)).await;
        let Ok((new_stamp, model)) = built else {
            continue;
        };
        stamp = new_stamp;
        sender.send_replace(Arc::new(model));
    }
}

fn current_stamp(sources: &Sources) -> Stamp {
    let snapshot = sources.snapshots.borrow().generation;
    let (reloads, reload_ok) = match &sources.reloads {
        Some(r) => {
            let r = r.borrow();
            (r.count, r.ok)
        }
        None => (0, true),
    };
    let installed = sources.scenarios.current();
    let fired = installed.counters.iter().map(|c| c.fired()).sum();
    Stamp {
        streams: sources.registry.generation(),
        snapshot,
        reloads,
        reload_ok,
        scenario: (installed.generation, fired),
    }
}

fn build(sources: &Sources, generation: u64) -> (Stamp, PageModel) {
    // The stamp first: a change while building shows up as a new stamp on the next tick.
    let stamp = current_stamp(sources);
    let snapshot = sources.snapshots.borrow().clone();
    let reload = sources.reload_summary(&snapshot);
    let streams = sources.registry.shared_streams();
    let counters = sources.registry.counters();
    let mut model = super::model::build(generation, &streams, &snapshot, Some(reload), counters);
    let scenario = crate::admin::status::scenario::view(&sources.scenarios);
    let shown = !scenario.rules.is_empty() || scenario.error.is_some();
    model.scenario = shown.then_some(scenario);
    model.replay = sources.registry.replay().map(|r| r.view());
    (stamp, model)
}
