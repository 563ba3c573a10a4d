//! A transcript file back into lines. The first bad line stops the read with
//! `FILE:LINE[:COLUMN]: what is wrong`; a file of another schema is refused at line 1.

use std::{
    collections::HashMap,
    fs::File,
    io::{self, BufRead, BufReader},
    path::Path,
};

use serde::Deserialize;

use crate::{
    error::{Error, LineError},
    line::{Event, Header, SCHEMA},
};

/// A whole transcript in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// How errors and diffs name the file (the path as given).
    pub file: String,
    /// The first line.
    pub header: Header,
    /// Every event line after it, in file order, blank lines skipped.
    pub events: Vec<Numbered>,
}

/// An event and the line it was read from (1-based; the header is line 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Numbered {
    /// The 1-based line number in the file.
    pub line: usize,
    /// The event on that line.
    pub event: Event,
}

/// Reads the whole file at `path`; the first bad line is an error.
pub fn read_file(path: &Path) -> Result<Transcript, Error> {
    let file = path.display().to_string();
    let input = File::open(path).map_err(|source| Error::Io {
        file: file.clone(),
        source,
    })?;
    read(&file, BufReader::new(input))
}

/// The lines of `path` before its first bad one, and the error that bad line gives (`None`: the
/// whole file read). A file that cannot be opened or has no valid header is still an error.
pub fn read_file_prefix(path: &Path) -> Result<(Transcript, Option<Error>), Error> {
    let file = path.display().to_string();
    let input = File::open(path).map_err(|source| Error::Io {
        file: file.clone(),
        source,
    })?;
    read_prefix(&file, BufReader::new(input))
}

/// Reads a transcript from `input`; `file` names it in errors.
pub fn read(file: &str, input: impl BufRead) -> Result<Transcript, Error> {
    match read_prefix(file, input)? {
        (transcript, None) => Ok(transcript),
        (_, Some(error)) => Err(error),
    }
}

/// Reads `input` up to its first bad line: the lines before it, and its error.
pub fn read_prefix(
    file: &str,
    mut input: impl BufRead,
) -> Result<(Transcript, Option<Error>), Error> {
    let mut text = String::new();
    let mut line = 0;
    let mut next = |text: &mut String| -> Result<Option<usize>, Error> {
        text.clear();
        line += 1;
        match input.read_line(text) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(line)),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                Err(at(file, line, None, "not UTF-8 text".into()))
            }
            Err(source) => Err(Error::Io {
                file: file.to_string(),
                source,
            }),
        }
    };
    if next(&mut text)?.is_none() {
        let message = format!(
            "empty file: a transcript starts with a header line naming its schema ({SCHEMA})"
        );
        return Err(at(file, 1, None, message));
    }
    let header = header(file, text.trim_end())?;
    let mut events = Vec::new();
    let stopped = loop {
        let n = match next(&mut text) {
            Ok(Some(n)) => n,
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        let json = text.trim_end();
        if json.is_empty() {
            continue;
        }
        match serde_json::from_str(json) {
            Ok(event) => events.push(Numbered { line: n, event }),
            Err(e) => break Some(bad_line(file, n, json, &e)),
        }
    };
    let transcript = Transcript {
        file: file.to_string(),
        header,
        events,
    };
    Ok((transcript, stopped))
}

/// Only the schema, read before the rest of the header: another schema's header may have
/// other fields, and "unknown schema" is the error that helps.
#[derive(Deserialize)]
struct Probe {
    schema: Option<serde_json::Value>,
}

fn header(file: &str, json: &str) -> Result<Header, Error> {
    let probe: Probe = serde_json::from_str(json).map_err(|e| {
        let message = format!(
            "not a transcript: the first line should be its header, a JSON object ({})",
            json_message(&e)
        );
        at(file, 1, Some(e.column()), message)
    })?;
    match probe.schema {
        None => {
            let message =
                format!("not a transcript: the first line has no \"schema\" (expected {SCHEMA:?})");
            return Err(at(file, 1, None, message));
        }
        Some(serde_json::Value::String(s)) if s == SCHEMA => {}
        Some(other) => {
            let message = format!("unknown schema {other}: this xdsloop reads {SCHEMA:?}");
            return Err(at(file, 1, None, message));
        }
    }
    serde_json::from_str(json).map_err(|e| {
        at(
            file,
            1,
            Some(e.column()),
            format!("header: {}", json_message(&e)),
        )
    })
}

fn bad_line(file: &str, line: usize, json: &str, e: &serde_json::Error) -> Error {
    let second_header = serde_json::from_str::<Probe>(json).is_ok_and(|p| p.schema.is_some());
    if second_header {
        let message = "a second header line: two transcripts joined into one file?".to_string();
        return at(file, line, None, message);
    }
    let mut message = json_message(e);
    if e.is_eof() {
        message.push_str(" (the line is cut short: did the recorder stop mid-write?)");
    }
    at(file, line, Some(e.column()), message)
}

/// serde_json's message without its own "at line 1 column N": each line is parsed alone, so
/// its line is ours and its column goes into the location.
fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_string()
}

fn at(file: &str, line: usize, column: Option<usize>, message: String) -> Error {
    Error::Line(LineError {
        file: file.to_string(),
        line,
        column,
        message,
    })
}

impl Transcript {
    /// Each stream's node: the first node any line of that stream names. A stream's `open`
    /// line may come before its first request says who the node is. Stream 0 (stateless
    /// exchanges of any node) has none: its lines name their own.
    pub fn stream_nodes(&self) -> HashMap<u64, &str> {
        let mut nodes = HashMap::new();
        for Numbered { event, .. } in &self.events {
            if let (Some(stream @ 1..), Some(node)) = (event.stream, &event.node) {
                nodes.entry(stream).or_insert(node.as_str());
            }
        }
        nodes
    }

    /// `FILE:LINE`.
    pub fn location(&self, line: usize) -> String {
        format!("{}:{line}", self.file)
    }
}

#[cfg(test)]
mod tests;
