//! Resources a fault hides from one stream for a while (`flap`), sans-I/O. The fault stage
//! says which names of a type are gone ([`crate::protocol::machine::MachineHooks::mask`]);
//! the machine then serves that type as if the snapshot did not have them, so what it sends,
//! what its ledger records and what the client ACKs all agree: SotW pushes the cut set under
//! a version of its own, Delta lists the names in `removed_resources`, and lifting the mask
//! sends them again like any other change.

use std::{collections::BTreeMap, sync::Arc};

use crate::snapshot::TypeResources;

/// What the cut sets' versions are labelled with (`<version>-flap-<names hash>`).
const LABEL: &str = "flap";

/// One type's hidden names and the last cut made of them.
#[derive(Debug, Default)]
struct Mask {
    globs: Vec<String>,
    /// The set last cut and what was left of it (`None`: the globs picked none of it), so a
    /// stream builds (and encodes) each cut once per snapshot.
    cut: Option<(Arc<TypeResources>, Option<Arc<TypeResources>>)>,
}

/// The names hidden from one stream, per type URL.
#[derive(Debug, Default)]
pub(crate) struct Masks {
    types: BTreeMap<String, Mask>,
}

impl Masks {
    /// Hides the names `globs` pick from `type_url` (empty: nothing hidden); false when that
    /// was already so.
    pub(crate) fn set(&mut self, type_url: &str, globs: Vec<String>) -> bool {
        let now = self.types.get(type_url).map_or(&[][..], |m| &m.globs);
        if now == globs.as_slice() {
            return false;
        }
        if globs.is_empty() {
            self.types.remove(type_url);
        } else {
            let mask = Mask { globs, cut: None };
            self.types.insert(type_url.to_string(), mask);
        }
        true
    }

    /// `resources` of `type_url` as this stream is to see them.
    pub(crate) fn apply(
        &mut self,
        type_url: &str,
        resources: Arc<TypeResources>,
    ) -> Arc<TypeResources> {
        let Some(mask) = self.types.get_mut(type_url) else {
            return resources;
        };
        let cut = match &mask.cut {
            Some((from, cut)) if Arc::ptr_eq(from, &resources) => cut.clone(),
            _ => {
                let globs = &mask.globs;
                let gone = |name: &str| globs.iter().any(|g| glob_matches(g, name));
                let cut = resources.without(gone, LABEL).map(Arc::new);
                mask.cut = Some((resources.clone(), cut.clone()));
                cut
            }
        };
        cut.unwrap_or(resources)
    }
}

/// `*` matches any run of characters, `?` one character; everything else itself.
pub(crate) fn glob_matches(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    // The last `*` seen and where in `text` it started matching, to backtrack to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytes::Bytes;
    use xdsloop_proto::{Resource, type_url::CLUSTER};

    use super::*;

    fn clusters(names: &[&str]) -> Arc<TypeResources> {
        let resources: BTreeMap<String, Arc<Resource>> = names
            .iter()
            .map(|n| {
                let r = Resource {
                    type_url: CLUSTER.into(),
                    name: n.to_string(),
                    bytes: Bytes::new(),
                    version: "1".into(),
                    ttl: None,
                };
                (n.to_string(), Arc::new(r))
            })
            .collect();
        Arc::new(TypeResources::new(resources, None))
    }

    #[test]
    fn flap_mask_hides_what_its_globs_pick_until_lifted() {
        let mut masks = Masks::default();
        let all = clusters(&["api", "web-1", "web-2"]);
        assert!(Arc::ptr_eq(&masks.apply(CLUSTER, all.clone()), &all));
        assert!(masks.set(CLUSTER, vec!["web-*".into()]));
        assert!(!masks.set(CLUSTER, vec!["web-*".into()]), "unchanged");
        let cut = masks.apply(CLUSTER, all.clone());
        assert_eq!(cut.resources.keys().collect::<Vec<_>>(), ["api"]);
        assert!(
            Arc::ptr_eq(&masks.apply(CLUSTER, all.clone()), &cut),
            "one cut per snapshot"
        );
        let other = clusters(&["api"]);
        assert!(Arc::ptr_eq(&masks.apply(CLUSTER, other.clone()), &other));
        assert!(masks.set(CLUSTER, Vec::new()));
        assert!(Arc::ptr_eq(&masks.apply(CLUSTER, all.clone()), &all));
    }
}
