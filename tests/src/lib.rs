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
