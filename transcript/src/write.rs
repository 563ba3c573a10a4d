//! The line writer a recorder owns: one JSON object per line, buffered, on disk within
//! [`FLUSH_INTERVAL`] of being written.
//!
//! The policy is pure (the caller passes the time), so a recorder task drives it with its own
//! clock: write each event, sleep until [`LineWriter::next_flush`] when idle, and call
//! [`LineWriter::finish`] at shutdown. Each line goes to the buffer in one piece, so a file cut
//! short by a crash ends with at most one partial line, which the reader names.

use std::{
    fs::File,
    io::{self, BufWriter, Write},
    path::Path,
    time::{Duration, Instant, SystemTime},
};

use crate::{
    error::Error,
    line::{Event, Gap, Header, What},
};

/// The longest a written line waits in memory: `tail -f` and a crash lose at most this much.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);
/// The buffer: a busy recorder writes the file in chunks of this size.
pub const BUFFER_BYTES: usize = 64 * 1024;

/// Writes a transcript to `W` (a file, or a buffer in tests): the header, then one event a line.
pub struct LineWriter<W: Write> {
    out: BufWriter<W>,
    /// One line being serialised, reused so a line costs no allocation once warm.
    line: Vec<u8>,
    lines: u64,
    /// When the oldest line still in the buffer was written.
    pending_since: Option<Instant>,
}

impl<W: Write> std::fmt::Debug for LineWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineWriter")
            .field("lines", &self.lines)
            .finish_non_exhaustive()
    }
}

impl LineWriter<File> {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path, header: &Header) -> Result<Self, Error> {
        let io = |source| Error::Io {
            file: path.display().to_string(),
            source,
        };
        let file = File::create(path).map_err(io)?;
        Self::new(file, header).map_err(io)
    }
}

impl<W: Write> LineWriter<W> {
    /// Writes the header and puts it on disk at once, so even a recording cut short at start
    /// says what it is.
    pub fn new(out: W, header: &Header) -> io::Result<Self> {
        let mut writer = Self {
            out: BufWriter::with_capacity(BUFFER_BYTES, out),
            line: Vec::with_capacity(512),
            lines: 0,
            pending_since: None,
        };
        writer.put(header)?;
        writer.out.flush()?;
        Ok(writer)
    }

    /// Appends one event line.
    pub fn write(&mut self, event: &Event, now: Instant) -> io::Result<()> {
        self.put(event)?;
        self.lines += 1;
        if self.out.buffer().is_empty() {
            // The line was larger than the buffer and went straight to the file.
            self.pending_since = None;
        } else if self.pending_since.is_none() {
            self.pending_since = Some(now);
        }
        Ok(())
    }

    /// Records that the recorder lost `lost` events here (a `gap` line).
    pub fn gap(&mut self, t: SystemTime, lost: u64, now: Instant) -> io::Result<()> {
        let gap = Event {
            t,
            stream: None,
            seq: None,
            node: None,
            what: What::Gap(Gap { lost }),
        };
        self.write(&gap, now)
    }

    /// When buffered lines are due on disk, if any are waiting.
    pub fn next_flush(&self) -> Option<Instant> {
        self.pending_since.map(|since| since + FLUSH_INTERVAL)
    }

    /// Flushes if the oldest buffered line has waited [`FLUSH_INTERVAL`]; says whether it did.
    pub fn flush_if_due(&mut self, now: Instant) -> io::Result<bool> {
        match self.next_flush() {
            Some(due) if now >= due => self.flush().map(|()| true),
            _ => Ok(false),
        }
    }

    /// Puts every buffered line on disk now.
    pub fn flush(&mut self) -> io::Result<()> {
        self.pending_since = None;
        self.out.flush()
    }

    /// Event lines written so far (the header not counted).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Flushes everything and gives the output back.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush()?;
        self.out.into_inner().map_err(|e| e.into_error())
    }

    fn put(&mut self, value: &impl serde::Serialize) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, value).map_err(io::Error::other)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{line::Side, sample};

    fn text(writer: &LineWriter<Vec<u8>>) -> &str {
        std::str::from_utf8(writer.out.get_ref()).unwrap()
    }

    #[test]
    fn header_is_on_disk_before_any_event() {
        let writer = LineWriter::new(Vec::new(), &sample::header(Side::Client)).unwrap();
        assert!(
            text(&writer).starts_with(
                r#"{"schema":"xdsloop.transcript.v1","kind":"header","side":"client","#
            )
        );
        assert_eq!((writer.lines(), writer.next_flush()), (0, None));
    }

    #[test]
    fn lines_reach_the_output_once_the_oldest_waited_the_interval() {
        let mut writer = LineWriter::new(Vec::new(), &sample::header(Side::Server)).unwrap();
        let start = Instant::now();
        let header_len = text(&writer).len();
        writer
            .write(&sample::open(1, 1, "ads-sotw"), start)
            .unwrap();
        let later = start + Duration::from_millis(60);
        writer
            .write(&sample::sotw_request(1, 2, "cds", "", "", &[]), later)
            .unwrap();
        assert_eq!(
            writer.next_flush(),
            Some(start + FLUSH_INTERVAL),
            "the oldest line counts"
        );
        assert!(
            !writer
                .flush_if_due(start + Duration::from_millis(99))
                .unwrap()
        );
        assert_eq!(text(&writer).len(), header_len, "still buffered");
        assert!(writer.flush_if_due(start + FLUSH_INTERVAL).unwrap());
        let written: Vec<&str> = text(&writer).lines().collect();
        assert_eq!(written.len(), 3);
        assert!(written[2].contains(r#""kind":"request""#), "{}", written[2]);
        assert_eq!((writer.lines(), writer.next_flush()), (2, None));
    }

    #[test]
    fn a_full_buffer_is_written_without_waiting_and_lines_stay_whole() {
        let mut writer = LineWriter::new(Vec::new(), &sample::header(Side::Server)).unwrap();
        let now = Instant::now();
        let names: Vec<String> = (0..200).map(|i| format!("cluster-{i:04}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let line = sample::sotw_response(1, 3, "cds", "v1", "1-1", &names);
        let mut written = 0;
        while text(&writer).len() < BUFFER_BYTES {
            writer.write(&line, now).unwrap();
            written += 1;
        }
        assert!(written > 1, "several lines fit in the buffer");
        assert!(
            text(&writer).ends_with('\n'),
            "only whole lines reach the output"
        );
        let out = writer.finish().unwrap();
        let lines = std::str::from_utf8(&out).unwrap().lines().count();
        assert_eq!(lines, written + 1, "finish writes the rest");
    }

    #[test]
    fn gap_lines_carry_only_the_time_and_the_count() {
        let mut writer = LineWriter::new(Vec::new(), &sample::header(Side::Server)).unwrap();
        writer.gap(sample::at(5), 120, Instant::now()).unwrap();
        let out = String::from_utf8(writer.finish().unwrap()).unwrap();
        let last = out.lines().last().unwrap();
        assert_eq!(
            last,
            r#"{"t":"2025-01-02T12:00:05.000000Z","kind":"gap","lost":120}"#
        );
    }

    #[test]
    fn create_names_the_file_it_cannot_create() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing/dir/t.jsonl");
        let header = sample::header(Side::Server);
        let error = LineWriter::create(&path, &header)
            .err()
            .unwrap()
            .to_string();
        assert!(error.starts_with(&path.display().to_string()), "{error}");
        let path = dir.path().join("t.jsonl");
        LineWriter::create(&path, &header)
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(crate::read_file(&path).unwrap().header, header);
    }
}
