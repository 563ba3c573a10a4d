//! C1: the first request of every stream carries the full `node`; later ones may omit it, and
//! one that carries it names the same node.
//!
//! Per-type services open one stream per type, so each stream's own first request is judged.
//! REST fetches are stateless and never reach a judge.

use super::Violation;

/// C1's state: whether the stream's first request was seen.
#[derive(Debug, Default)]
pub(crate) struct FirstRequest {
    seen: bool,
}

impl FirstRequest {
    /// A request arrived; a violation if it is the stream's first and names no node.
    pub(crate) fn on_request(&mut self, type_url: &str, has_node: bool) -> Option<Violation> {
        if std::mem::replace(&mut self.seen, true) || has_node {
            return None;
        }
        Some(Violation::new(
            "C1.node",
            Some(type_url),
            format!(
                "the stream's first request (for {type_url}) carries no node: the server cannot \
                 tell which client this is (C1: the first request of every stream carries the \
                 full node)"
            ),
        ))
    }
}

/// A later request naming `node` on a stream that began as `first`: a violation if they differ.
pub(crate) fn same(first: &str, node: &str, type_url: &str) -> Option<Violation> {
    (first != node).then(|| {
        Violation::new(
            "C1.same-node",
            Some(type_url),
            format!(
                "a request (for {type_url}) names node {node:?} on a stream that began as node \
                 {first:?}: a stream is one client"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c1_only_the_first_request_must_carry_the_node() {
        let mut c1 = FirstRequest::default();
        assert_eq!(c1.on_request("cds", true), None);
        assert_eq!(
            c1.on_request("eds", false),
            None,
            "later requests may omit it"
        );
        let mut c1 = FirstRequest::default();
        let v = c1
            .on_request("cds", false)
            .expect("first request without node");
        assert_eq!((v.rule, v.check), ("C1", "C1.node"));
        assert!(v.message.contains("carries no node"));
        assert_eq!(c1.on_request("cds", false), None, "reported once");
    }
}
