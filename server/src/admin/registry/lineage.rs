//! What each node's earlier streams subscribed to, so a first request for a type can be told
//! apart as a subscription (new to the node) or a resubscription after a reconnect (the loop
//! step shown in transcripts and on the live page).
//!
//! Bounded: at most [`MAX_NODES`] node ids are remembered, the oldest forgotten first, so a
//! fleet that cycles through node ids cannot grow server memory.

use std::{
    collections::{BTreeSet, HashMap, VecDeque},
    sync::Arc,
};

/// Node ids remembered.
pub(crate) const MAX_NODES: usize = 10_000;

/// Types a node's streams have had, by node id.
#[derive(Debug, Default)]
pub(crate) struct Lineage {
    types: HashMap<String, Arc<BTreeSet<String>>>,
    /// Node ids, oldest first.
    order: VecDeque<String>,
}

impl Lineage {
    /// The types the node's closed streams had (shared, not copied).
    pub(crate) fn earlier_types(&self, node: &str) -> Arc<BTreeSet<String>> {
        self.types.get(node).cloned().unwrap_or_default()
    }

    /// A stream of `node` that had `types` closed.
    pub(crate) fn closed<'a>(&mut self, node: &str, types: impl IntoIterator<Item = &'a String>) {
        if !self.types.contains_key(node) {
            if self.order.len() == MAX_NODES
                && let Some(oldest) = self.order.pop_front()
            {
                self.types.remove(&oldest);
            }
            self.order.push_back(node.to_string());
        }
        let known = self.types.entry(node.to_string()).or_default();
        let new: Vec<&String> = types.into_iter().filter(|t| !known.contains(*t)).collect();
        if !new.is_empty() {
            Arc::make_mut(known).extend(new.into_iter().cloned());
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.types.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_remembers_the_types_of_its_closed_streams() {
        let mut lineage = Lineage::default();
        assert!(lineage.earlier_types("n").is_empty());
        let cds = "cds".to_string();
        let eds = "eds".to_string();
        lineage.closed("n", [&cds]);
        let seen = lineage.earlier_types("n");
        lineage.closed("n", [&cds, &eds]);
        assert_eq!(
            *seen,
            BTreeSet::from([cds.clone()]),
            "copies taken earlier stay"
        );
        assert_eq!(*lineage.earlier_types("n"), BTreeSet::from([cds, eds]));
        assert!(lineage.earlier_types("other").is_empty());
    }

    #[test]
    fn at_most_max_nodes_are_remembered_oldest_out_first() {
        let mut lineage = Lineage::default();
        let t = "cds".to_string();
        for n in 0..MAX_NODES + 3 {
            lineage.closed(&format!("n{n}"), [&t]);
        }
        assert_eq!(lineage.len(), MAX_NODES);
        assert!(lineage.earlier_types("n0").is_empty());
        assert!(
            !lineage
                .earlier_types(&format!("n{}", MAX_NODES + 2))
                .is_empty()
        );
    }
}
