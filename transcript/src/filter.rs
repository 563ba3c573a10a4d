//! Which lines `transcript print` keeps. Every given filter must hold. A line without the
//! attribute a filter asks about does not match it (an `open` line has no type), except that
//! a stream's lines all count as its node's, and `gap` lines are always kept: the events they
//! stand for could have matched.

use std::collections::HashMap;

use crate::line::{Event, Kind, TypeUrl};

/// The filters of `transcript print`; `None` or empty means "any".
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Node id glob: `*` any run of characters, `?` one.
    pub node: Option<String>,
    /// Only lines about this type.
    pub type_url: Option<TypeUrl>,
    /// Only lines of the stream with this id (the `stream` field).
    pub stream: Option<u64>,
    /// Empty: every kind.
    pub kinds: Vec<Kind>,
}

impl Filter {
    /// `nodes` maps each stream to its node ([`crate::Transcript::stream_nodes`]).
    pub fn keeps(&self, event: &Event, nodes: &HashMap<u64, &str>) -> bool {
        if event.kind() == Kind::Gap {
            return true;
        }
        if !self.kinds.is_empty() && !self.kinds.contains(&event.kind()) {
            return false;
        }
        if self.stream.is_some() && event.stream != self.stream {
            return false;
        }
        if let Some(wanted) = &self.type_url
            && event.type_url() != Some(wanted)
        {
            return false;
        }
        match &self.node {
            None => true,
            Some(pattern) => {
                let stream_node = event.stream.and_then(|s| nodes.get(&s).copied());
                let node = event.node.as_deref().or(stream_node);
                node.is_some_and(|node| glob(pattern, node))
            }
        }
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters (also none) and
/// `?` exactly one.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    // The last `*` seen and the text position it was tried at: on a mismatch, let that star
    // swallow one more character and retry (linear backtracking, no recursion).
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample;

    #[test]
    fn glob_matches_stars_and_question_marks() {
        assert!(glob("edge-*", "edge-1"));
        assert!(glob("edge-*", "edge-"));
        assert!(!glob("edge-*", "core-1"));
        assert!(glob("*-1", "edge-1"));
        assert!(glob("e?ge-*1", "edge-west-1"));
        assert!(!glob("e?ge", "ege"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "aXbYbZc"));
        assert!(!glob("a*b*c", "aXbYbZ"));
        assert!(glob("exact", "exact") && !glob("exact", "exactly"));
    }

    fn kept(filter: &Filter) -> Vec<Kind> {
        let events = sample::one_of_each();
        let mut nodes = HashMap::new();
        nodes.insert(3, "edge-1");
        events
            .iter()
            .filter(|e| filter.keeps(e, &nodes))
            .map(Event::kind)
            .collect()
    }

    #[test]
    fn type_filter_keeps_lines_about_that_type_and_gaps() {
        let filter = Filter {
            type_url: Some(TypeUrl::parse("eds").unwrap()),
            ..Filter::default()
        };
        assert_eq!(kept(&filter), [Kind::Fault, Kind::Gap]);
    }

    #[test]
    fn kind_and_stream_filters_combine() {
        let filter = Filter {
            stream: Some(5),
            kinds: vec![Kind::Request],
            ..Filter::default()
        };
        assert_eq!(kept(&filter), [Kind::Request, Kind::Gap]);
    }

    #[test]
    fn node_filter_uses_the_stream_node_for_lines_without_one() {
        let mut events = sample::one_of_each();
        events[0].node = None; // an open line, before the first request named the node
        let nodes: HashMap<u64, &str> = [(3, "edge-1")].into();
        let edge = Filter {
            node: Some("edge-*".into()),
            ..Filter::default()
        };
        assert!(edge.keeps(&events[0], &nodes));
        let core = Filter {
            node: Some("core-*".into()),
            ..Filter::default()
        };
        let kinds: Vec<Kind> = events
            .iter()
            .filter(|e| core.keeps(e, &nodes))
            .map(Event::kind)
            .collect();
        assert_eq!(kinds, [Kind::Gap]);
    }
}
