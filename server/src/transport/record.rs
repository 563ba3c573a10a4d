//! The transcript recorder (`--record FILE`): every event of every stream, one JSON line each
//! (docs/transcripts.md), written from the server's event bus.
//!
//! It runs on a thread of its own, with a small runtime of its own for its timer, so a slow disk
//! never stalls a runtime thread that serves xDS streams, and it keeps working while the
//! server's runtime shuts down; it only ever reads the bus, so it cannot slow a stream either. When it falls
//! more than the bus's capacity behind, the events it lost become one `gap` line and count in
//! `/status` (`recorder.lost`). Lines reach the file within 100 ms; the rest at shutdown.

use std::{
    fs::File,
    path::PathBuf,
    sync::Arc,
    thread::JoinHandle,
    time::{Instant, SystemTime},
};

use tokio::{runtime, sync::watch};
use tracing::{error, info};
use xdsloop_proto::Codec;
use xdsloop_transcript::{Header, LineWriter, line::Side};

use crate::{
    admin::lines,
    admin::registry::{
        Registry,
        bus::{Listener, Received},
        stats::RecorderStats,
    },
    error::Error,
    protocol::facts::Capture,
};

/// What to record.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The transcript file to write.
    pub path: PathBuf,
    /// Each resource's proto3 JSON in every response line (`--record-resources`).
    pub resources: bool,
}

/// A running recorder. [`Recorder::finish`] writes what is left and closes the file.
#[derive(Debug)]
pub(crate) struct Recorder {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

/// Creates the file (an error names it), starts listening on `registry`'s bus and writing.
pub(crate) fn start(
    registry: &Registry,
    recording: &Recording,
    codec: Codec,
) -> Result<Recorder, Error> {
    let tool = concat!("xdsloop-server ", env!("CARGO_PKG_VERSION"));
    let header = Header::new(Side::Server, tool, SystemTime::now(), recording.resources);
    let writer = LineWriter::create(&recording.path, &header).map_err(|e| Error::Record {
        path: recording.path.clone(),
        message: e.to_string(),
    })?;
    let capture = match recording.resources {
        true => Capture::Bodies,
        false => Capture::Full,
    };
    let listener = registry.bus().listen(capture);
    let stats = Arc::new(RecorderStats::new(recording.path.clone()));
    registry.attach_recorder(stats.clone());
    let (stop, stopped) = watch::channel(false);
    let task = Task {
        listener,
        writer,
        stats,
        codec: recording.resources.then_some(codec),
        stopped,
    };
    let thread = std::thread::Builder::new()
        .name("xdsloop-recorder".to_string())
        .spawn(move || {
            let timer = runtime::Builder::new_current_thread().enable_time().build();
            match timer {
                Ok(timer) => task.run(&timer),
                Err(e) => task.fail(&e),
            }
        })
        .map_err(|e| Error::Record {
            path: recording.path.clone(),
            message: format!("cannot start the recorder thread: {e}"),
        })?;
    info!(path = %recording.path.display(), resources = recording.resources, "recording transcript");
    Ok(Recorder {
        stop,
        thread: Some(thread),
    })
}

impl Recorder {
    /// Writes the events already on the bus, flushes and closes the file.
    pub(crate) async fn finish(mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// What the recorder thread waits for next.
enum Next {
    Received(Received),
    Flush,
    Stop,
}

struct Task {
    listener: Listener,
    writer: LineWriter<File>,
    stats: Arc<RecorderStats>,
    codec: Option<Codec>,
    stopped: watch::Receiver<bool>,
}

impl Task {
    fn run(mut self, timer: &runtime::Runtime) {
        loop {
            let next = timer.block_on(self.next());
            let written = match next {
                Next::Received(received) => self.write(received),
                Next::Flush => self.writer.flush_if_due(Instant::now()).map(|_| ()),
                Next::Stop => break,
            };
            if let Err(e) = written {
                return self.fail(&e);
            }
        }
        // The streams that ended at shutdown said so on the bus before the recorder stopped.
        while let Some(received) = self.listener.try_recv() {
            if let Err(e) = self.write(received) {
                return self.fail(&e);
            }
        }
        let Task { writer, stats, .. } = self;
        if let Err(e) = writer.finish() {
            fail(&stats, &e);
        }
    }

    async fn next(&mut self) -> Next {
        let flush_at = self.writer.next_flush().map(tokio::time::Instant::from_std);
        let flush = async move {
            match flush_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            received = self.listener.recv() => Next::Received(received),
            () = flush => Next::Flush,
            _ = self.stopped.wait_for(|stop| *stop) => Next::Stop,
        }
    }

    fn write(&mut self, received: Received) -> std::io::Result<()> {
        let now = Instant::now();
        match received {
            Received::Event(event) => {
                let line = lines::to_line(&event, self.codec.as_ref());
                self.writer.write(&line, now)?;
            }
            Received::Gap { lost } => {
                self.stats.add_lost(lost);
                self.writer.gap(SystemTime::now(), lost, now)?;
            }
        }
        self.stats.set_lines(self.writer.lines());
        self.writer.flush_if_due(now).map(|_| ())
    }

    /// Stops recording (dropping the listener ends the events' cost) and says why.
    fn fail(self, e: &std::io::Error) {
        fail(&self.stats, e);
    }
}

fn fail(stats: &RecorderStats, e: &std::io::Error) {
    let path = stats.path.display().to_string();
    error!(%path, error = %e, "cannot write the transcript: recording stopped");
    stats.set_error(format!("{path}: {e}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        admin::registry::bus::CAPACITY,
        tap::{CloseReason, Closed, What, WireEvent},
    };
    use xdsloop_transcript::{line::What as Line, read_file};

    fn closed(seq: u32) -> Arc<WireEvent> {
        Arc::new(WireEvent {
            at: SystemTime::UNIX_EPOCH,
            stream: 1,
            seq,
            node: None,
            what: What::Closed(Closed {
                reason: CloseReason::Client,
                status: None,
            }),
        })
    }

    #[tokio::test]
    async fn a_recorder_that_fell_behind_writes_a_gap_and_counts_the_loss() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let registry = Registry::new();
        let header = Header::new(Side::Server, "test", SystemTime::now(), false);
        let stats = Arc::new(RecorderStats::new(path.clone()));
        let (_stop, stopped) = watch::channel(false);
        let mut task = Task {
            listener: registry.bus().listen(Capture::Full),
            writer: LineWriter::create(&path, &header).unwrap(),
            stats: stats.clone(),
            codec: None,
            stopped,
        };
        for seq in 0..(CAPACITY + 3) as u32 {
            registry.bus().send(closed(seq));
        }
        for _ in 0..2 {
            let Next::Received(received) = task.next().await else {
                panic!("an event or a gap is waiting");
            };
            task.write(received).unwrap();
        }
        task.writer.flush().unwrap();
        let view = stats.view();
        assert_eq!((view.lost, view.lines, view.error), (3, 2, None));
        let transcript = read_file(&path).unwrap();
        assert!(matches!(transcript.events[0].event.what, Line::Gap(g) if g.lost == 3));
        assert_eq!(
            transcript.events[1].event.seq,
            Some(3),
            "the oldest kept event"
        );
    }
}
