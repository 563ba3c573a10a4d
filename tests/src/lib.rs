//! Helpers shared by the end-to-end tests (`e2e/`) and the benches (`benches/`); the tests
//! themselves live in those targets.

pub mod certs;

use std::path::Path;

/// Copies the directory tree `from` into `to` (created if missing), so a test can edit a
/// fixture set without touching the checked-in one. Panics on any I/O error: it is test setup.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Fails the test unless the server's conformance judge found nothing: every server a test
/// starts holds one, so no test can forget to check that xdsloop-client (or a well-behaved raw
/// client) broke no client rule. Checked when the guard drops (with the server), or at once
/// with [`NoViolations::check`]. A test whose client misbehaves on purpose says so with
/// [`NoViolations::allow`].
#[derive(Debug)]
pub struct NoViolations {
    registry: xdsloop_server::status::Registry,
    allowed: bool,
}

impl NoViolations {
    /// A guard over the judge of the server that owns `registry`.
    pub fn new(registry: xdsloop_server::status::Registry) -> Self {
        Self {
            registry,
            allowed: false,
        }
    }

    /// This test's clients break client rules on purpose (raw protocol tests, the check
    /// suite's probes, the conformance tests).
    pub fn allow(&mut self) {
        self.allowed = true;
    }

    /// Panics, listing them, if the judge found violations so far.
    pub fn check(&self) {
        let found = self.registry.counters().violations;
        if found == 0 {
            return;
        }
        let open = self.registry.streams();
        let closed = self.registry.recently_closed();
        let streams = open.iter().chain(closed.iter().map(|c| &c.stream));
        let lines: Vec<String> = streams
            .flat_map(|s| s.violations.last.iter().map(move |v| (s.id, v)))
            .map(|(id, v)| format!("  stream {id}: {v}"))
            .collect();
        panic!(
            "the conformance judge found {found} client violation(s):\n{}",
            lines.join("\n")
        );
    }
}

impl Drop for NoViolations {
    fn drop(&mut self) {
        if !self.allowed && !std::thread::panicking() {
            self.check();
        }
    }
}
