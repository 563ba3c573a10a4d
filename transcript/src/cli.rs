//! The `transcript` subcommand (`print`, `diff`), the same on both binaries.
//!
//! A binary with clap subcommands adds a `Transcript(xdsloop_transcript::cli::Args)` variant
//! and calls [`main`] with it; one that dispatches on its first argument calls [`main_from`].

use std::{
    ffi::OsString,
    io::{self, Write},
    path::PathBuf,
    process::ExitCode,
};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::{
    diff::{self, Options},
    error::Error,
    filter::Filter,
    line::{Kind, TypeUrl},
    normalize::Ignore,
    print, read,
};

/// Exit status of `diff` when the transcripts differ (or one is incomplete).
pub const EXIT_DIFFERENT: u8 = 1;
/// Exit status when a file cannot be read or a flag cannot be used.
pub const EXIT_UNREADABLE: u8 = 2;

/// Read, filter and compare transcripts: the JSON-lines record of an xDS conversation.
#[derive(Debug, Parser)]
#[command(
    name = "transcript",
    long_about = "Read, filter and compare transcripts: the JSON-lines record of an xDS \
                  conversation, one line per stream opened or closed, request, response, fault \
                  and conformance violation, as seen by the server or by the client. The format \
                  is described in docs/transcripts.md.",
    after_help = "Examples (the same on xdsloop-server and xdsloop-client):\n  \
                  transcript print run.jsonl --node 'edge-*' --type cds\n  \
                  transcript print run.jsonl --kind request --stream 3\n  \
                  transcript diff tests/golden/server.jsonl run.jsonl      # 0 same, 1 different, 2 unreadable\n  \
                  transcript diff a.jsonl b.jsonl --ignore version --strict-order"
)]
pub struct Args {
    /// `print` or `diff`, with its flags.
    #[command(subcommand)]
    pub command: Command,
}

/// What `transcript` does: print one transcript or compare two.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a transcript, one line per event: time, stream, node, type, direction, step and
    /// what the message says.
    Print(PrintArgs),
    /// Compare two transcripts, ignoring what varies between runs of the same test.
    #[command(
        long_about = "Compare two transcripts, ignoring what varies between runs of \
                            the same test: times, sequence numbers, peer addresses and sizes \
                            are dropped; stream ids are renumbered per node (edge-1#1, \
                            edge-1#2) and nonces per stream and type (n1, n2), both by first \
                            appearance, so an ACK still points at the response it answers. \
                            Each node's stream is compared type by type, since the order \
                            between types depends on the client's timing (and so does which \
                            type's request carries the node: has_node is compared only with \
                            --strict-order, which compares whole streams).\n\n\
                            Exit status: 0 the same, 1 different (listed as -/+ lines with \
                            FILE:LINE of each side) or incomplete (a transcript with a gap \
                            line), 2 a file cannot be read."
    )]
    Diff(DiffArgs),
}

/// The flags of `transcript print`: the file and the filters, all of which must hold.
#[derive(Debug, clap::Args)]
pub struct PrintArgs {
    /// The transcript to print.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only lines of nodes whose id matches GLOB (`*` any run of characters, `?` one).
    #[arg(long, value_name = "GLOB")]
    pub node: Option<String>,
    /// Only lines about this type: cds, eds, lds, rds, ... or a type URL.
    #[arg(long = "type", value_name = "TYPE", value_parser = TypeUrl::parse)]
    pub type_url: Option<TypeUrl>,
    /// Only the stream with this id, as the stream column shows it (`s3`) or as a number (`3`).
    #[arg(long, value_name = "ID", value_parser = stream_id)]
    pub stream: Option<u64>,
    /// Only these kinds of line, comma-separated. Gap lines are always shown: the events they
    /// stand for could have matched.
    #[arg(long, value_name = "KIND", value_delimiter = ',', value_enum)]
    pub kind: Vec<Kind>,
}

/// `s3` (the stream column of `print`) or `3` (the `stream` field of a line).
fn stream_id(text: &str) -> Result<u64, String> {
    let digits = text.strip_prefix('s').unwrap_or(text);
    digits
        .parse()
        .map_err(|_| format!("{text:?} is not a stream id: give it as print shows it, s3 or 3"))
}

/// The flags of `transcript diff`: the two files and what else to ignore.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The expected transcript (a golden file).
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The transcript to check.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Also ignore FIELD (repeatable): a field (`version`) or a path into objects and lists
    /// (`resources.version`, `error_detail.message`).
    #[arg(long, value_name = "FIELD")]
    pub ignore: Vec<String>,
    /// Compare each stream as one sequence, so the order between types counts too.
    #[arg(long)]
    pub strict_order: bool,
}

/// How a command ended, when it could read its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `print` wrote the file.
    Printed,
    /// `diff` found no difference.
    Same,
    /// `diff` found a difference, or one transcript has a gap.
    Different,
}

impl Outcome {
    /// The process exit status: 0, or [`EXIT_DIFFERENT`].
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Printed | Outcome::Same => 0,
            Outcome::Different => EXIT_DIFFERENT,
        }
    }
}

/// Runs the command, writing what it shows to `out`.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<Outcome, Error> {
    let output = |source: io::Error| Error::Io {
        file: "output".to_string(),
        source,
    };
    match &args.command {
        Command::Print(p) => {
            // A file cut by a crash is what people print most urgently: show what was written
            // in full, then say where it stops.
            let (transcript, bad_line) = read::read_file_prefix(&p.file)?;
            let filter = Filter {
                node: p.node.clone(),
                type_url: p.type_url.clone(),
                stream: p.stream,
                kinds: p.kind.clone(),
            };
            print::print(&transcript, &filter, out).map_err(output)?;
            match bad_line {
                Some(error) => Err(error),
                None => Ok(Outcome::Printed),
            }
        }
        Command::Diff(d) => {
            let options = Options {
                ignore: Ignore::parse(&d.ignore)?,
                strict_order: d.strict_order,
            };
            let (a, b) = (read::read_file(&d.a)?, read::read_file(&d.b)?);
            let comparison = diff::diff(&a, &b, &options);
            out.write_all(comparison.report.as_bytes())
                .map_err(output)?;
            Ok(if comparison.same {
                Outcome::Same
            } else {
                Outcome::Different
            })
        }
    }
}

/// Runs the command on stdout; `report` shows an error the way the binary shows its errors.
pub fn main(args: Args, report: impl FnOnce(&Error)) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match run(&args, &mut stdout) {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        // `transcript print … | head`: the reader has what it wanted.
        Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            report(&e);
            ExitCode::from(EXIT_UNREADABLE)
        }
    }
}

/// Parses `argv` (its first item is the subcommand's own name) and runs it; help and usage
/// errors are clap's, under `bin_name` (`xdsloop-client transcript`).
pub fn main_from(bin_name: &str, argv: impl IntoIterator<Item = OsString>) -> ExitCode {
    let matches = Args::command().bin_name(bin_name).get_matches_from(argv);
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    main(args, |e| eprintln!("{bin_name}: {e}"))
}
