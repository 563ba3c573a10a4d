//! The ways one sentence is tried: a check runs once per case of its matrix, the type, the
//! variant (State of the World or Delta) and the service (ADS or the type's own service) that a
//! sentence holds for, each case on a stream and connection of its own.

use std::fmt;

use xdsloop_proto::Variant;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::describe;
use super::probe::Service;

/// One way of trying a sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Case {
    pub type_url: &'static str,
    pub variant: Variant,
    pub service: Service,
}

impl fmt::Display for Case {
    /// `eds sotw ads`, `cds delta cds-service`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let variant = match self.variant {
            Variant::Sotw => "sotw",
            Variant::Delta => "delta",
        };
        let short = describe::short(self.type_url);
        write!(f, "{short} {variant} {}", self.service.label())
    }
}

/// The four types the checks try: listeners and clusters (full state in SotW, wildcard-able),
/// routes and endpoints (named).
pub(super) const ALL_TYPES: &[&str] = &[LISTENER, ROUTE, CLUSTER, ENDPOINT];
/// The types with a wildcard and, in SotW, full-state responses.
pub(super) const ROOT_TYPES: &[&str] = &[LISTENER, CLUSTER];
pub(super) const SOTW: &[Variant] = &[Variant::Sotw];
pub(super) const DELTA: &[Variant] = &[Variant::Delta];
pub(super) const BOTH: &[Variant] = &[Variant::Sotw, Variant::Delta];

/// Which services a check's cases use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Services {
    /// ADS only: the sentence is about several types on one stream, or an edit's order.
    Ads,
    /// ADS and each type's own service.
    Each,
}

/// A check's cases: every type × variant × service it lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Matrix {
    pub types: &'static [&'static str],
    pub variants: &'static [Variant],
    pub services: Services,
}

impl Matrix {
    pub(super) const fn new(
        types: &'static [&'static str],
        variants: &'static [Variant],
        services: Services,
    ) -> Self {
        Self {
            types,
            variants,
            services,
        }
    }

    /// Every case, types in the spec's dependency order, then variant, then service.
    pub(super) fn cases(&self) -> Vec<Case> {
        let mut cases = Vec::new();
        for &type_url in self.types {
            for &variant in self.variants {
                cases.push(Case {
                    type_url,
                    variant,
                    service: Service::Ads,
                });
                let own = Service::for_type(type_url).filter(|_| self.services == Services::Each);
                if let Some(service) = own {
                    cases.push(Case {
                        type_url,
                        variant,
                        service,
                    });
                }
            }
        }
        cases
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_lists_each_type_variant_and_service_once() {
        let m = Matrix::new(&[CLUSTER, ENDPOINT], BOTH, Services::Each);
        let shown: Vec<String> = m.cases().iter().map(Case::to_string).collect();
        assert_eq!(
            shown,
            [
                "cds sotw ads",
                "cds sotw cds-service",
                "cds delta ads",
                "cds delta cds-service",
                "eds sotw ads",
                "eds sotw eds-service",
                "eds delta ads",
                "eds delta eds-service",
            ]
        );
        assert_eq!(
            Matrix::new(ROOT_TYPES, SOTW, Services::Ads).cases().len(),
            2
        );
    }
}
