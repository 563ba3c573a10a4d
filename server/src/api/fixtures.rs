//! A fixture directory as the server reads it: every `*.yaml`/`*.yml`/`*.json` file
//! under it, decoded into a [`Snapshot`](crate::Snapshot) (`docs/fixtures.md`), and the
//! watcher that reloads it on every edit.
pub use crate::config::fixtures::{DEFAULT_MAX_FILE_BYTES, FixtureError, Loader, load};
pub use crate::config::watch::{InProgress, ReloadStatus, Settings, Watcher, WatcherHealth};
