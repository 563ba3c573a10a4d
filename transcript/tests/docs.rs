//! docs/transcripts.md cannot drift from the code: its console examples are run and their
//! output compared, its step table is the code's, and the example recordings it uses are
//! byte for byte what the line writer writes.

use std::path::{Path, PathBuf};

use clap::Parser;
use xdsloop_transcript::{
    LineWriter,
    cli::{self, Args, EXIT_UNREADABLE},
    read_file,
    step::STEPS,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn docs() -> String {
    std::fs::read_to_string(root().join("docs/transcripts.md")).unwrap()
}

/// A command line's words; single quotes group (`'edge-*'`).
fn words(line: &str) -> Vec<String> {
    let mut words = vec![];
    let mut quoted = false;
    let mut word: Option<String> = None;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                word.get_or_insert_default();
            }
            ' ' if !quoted => words.extend(word.take()),
            c => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    words
}

/// Runs `transcript ARGS` from the repository root, as the docs show it; the exit status is
/// the last line when the command ends with `; echo "exit $?"`.
fn run(command: &str) -> String {
    let (command, echo_status) = match command.strip_suffix("; echo \"exit $?\"") {
        Some(command) => (command, true),
        None => (command, false),
    };
    let words = words(command);
    let at = words
        .iter()
        .position(|w| w == "transcript")
        .expect("a transcript command");
    let args = Args::try_parse_from(&words[at..]).unwrap_or_else(|e| panic!("{command}: {e}"));
    // The files are named as in the docs, relative to the root: the tests cannot chdir (they
    // run in parallel), so names are made absolute here and relative again in the output.
    let mut out = Vec::new();
    let absolute = |p: &mut PathBuf| *p = root().join(&*p);
    let mut args = args;
    match &mut args.command {
        cli::Command::Print(p) => absolute(&mut p.file),
        cli::Command::Diff(d) => {
            absolute(&mut d.a);
            absolute(&mut d.b);
        }
    }
    let status = match cli::run(&args, &mut out) {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => {
            out.extend_from_slice(format!("{e}\n").as_bytes());
            EXIT_UNREADABLE
        }
    };
    let mut text = String::from_utf8(out).unwrap();
    if echo_status {
        text += &format!("exit {status}\n");
    }
    text.replace(&format!("{}/", root().display()), "")
}

#[test]
fn console_examples_in_the_docs_print_what_they_show() {
    let docs = docs();
    let mut checked = 0;
    for block in docs.split("```console\n").skip(1) {
        let block = block.split("```").next().unwrap();
        let mut commands = block.split("$ ").filter(|c| !c.is_empty());
        for command in commands.by_ref() {
            let (line, expected) = command.split_once('\n').unwrap();
            assert_eq!(run(line), expected, "docs/transcripts.md: `{line}`");
            checked += 1;
        }
    }
    assert_eq!(checked, 8, "every console example was run");
}

#[test]
fn step_table_in_the_docs_is_the_code() {
    let docs = docs();
    for info in STEPS {
        let row = format!(
            "| `{}` | {} | {} | {} |",
            info.step.label(),
            info.title,
            info.trigger,
            info.envoy
        );
        assert!(
            docs.contains(&row),
            "docs/transcripts.md lacks the row\n{row}"
        );
    }
}

#[test]
fn example_recordings_are_what_the_writer_writes() {
    let dir = root().join("examples/transcripts");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let transcript = read_file(&path).unwrap();
        let mut writer = LineWriter::new(Vec::new(), &transcript.header).unwrap();
        for n in &transcript.events {
            writer.write(&n.event, std::time::Instant::now()).unwrap();
        }
        let written = String::from_utf8(writer.finish().unwrap()).unwrap();
        assert_eq!(
            written,
            std::fs::read_to_string(&path).unwrap(),
            "{}",
            path.display()
        );
        files += 1;
    }
    assert_eq!(files, 7);
}
