//! The architecture, checked: the layers of `server/` and `client/` and the one-way
//! dependencies between their modules (docs/architecture.md), the sans-I/O rule for the
//! protocol layers, and the source links of the docs. Plain text analysis of the source
//! tree: no crate of the workspace is compiled into this test.

mod doc_links;
mod modules;
mod purity;
mod rust_source;
