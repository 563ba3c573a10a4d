//! Where snapshots come from: the fixture directory, decoded and checked ([`fixtures`], pure:
//! it reads files and nothing else), and the watcher that reloads it after every edit and
//! publishes the result ([`watch`]). The only output is a `tokio::sync::watch` of
//! `Arc<Snapshot>` (and one of the last reload's outcome): this layer never sees a stream.

pub(crate) mod fixtures;
pub(crate) mod watch;
