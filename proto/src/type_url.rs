//! xDS type URLs and the short aliases people type on a command line.

/// What every type URL a fixture may use starts with; the message name follows it.
pub const PREFIX: &str = "type.googleapis.com/";
/// CDS: `Cluster`.
pub const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
/// EDS: `ClusterLoadAssignment`, named by its `cluster_name`.
pub const ENDPOINT: &str = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
/// LDS: `Listener`.
pub const LISTENER: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
/// RDS: `RouteConfiguration`.
pub const ROUTE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
/// SRDS: `ScopedRouteConfiguration`.
pub const SCOPED_ROUTE: &str = "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration";
/// VHDS: `VirtualHost`, served on demand (Delta only).
pub const VIRTUAL_HOST: &str = "type.googleapis.com/envoy.config.route.v3.VirtualHost";
/// SDS: `Secret`.
pub const SECRET: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";
/// RTDS: `Runtime`.
pub const RUNTIME: &str = "type.googleapis.com/envoy.service.runtime.v3.Runtime";
/// ECDS: `TypedExtensionConfig`.
pub const EXTENSION_CONFIG: &str = "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig";

/// Every xDS type with a discovery service, with its alias, in make-before-break order:
/// clusters before their endpoints, listeners before their routes (xDS protocol, "eventual
/// consistency considerations"). Removals go in the reverse order.
pub const ORDERED: &[(&str, &str)] = &[
    ("cds", CLUSTER),
    ("eds", ENDPOINT),
    ("lds", LISTENER),
    ("rds", ROUTE),
    ("srds", SCOPED_ROUTE),
    ("vhds", VIRTUAL_HOST),
    ("sds", SECRET),
    ("rtds", RUNTIME),
    ("ecds", EXTENSION_CONFIG),
];

/// Resolves an alias (`cds`, `clusters`, `CDS`), a message name
/// (`envoy.config.cluster.v3.Cluster`) or a full type URL to the full type URL.
/// Unknown full type URLs are passed through unchanged: users may add their own types.
pub fn resolve(alias: &str) -> Option<String> {
    let lower = alias.trim().to_ascii_lowercase();
    let known = match lower.as_str() {
        "cds" | "cluster" | "clusters" => Some(CLUSTER),
        "eds" | "endpoint" | "endpoints" => Some(ENDPOINT),
        "lds" | "listener" | "listeners" => Some(LISTENER),
        "rds" | "route" | "routes" => Some(ROUTE),
        "srds" | "scoped-routes" | "scoped_routes" => Some(SCOPED_ROUTE),
        "vhds" | "virtual-hosts" | "virtual_hosts" => Some(VIRTUAL_HOST),
        "sds" | "secret" | "secrets" => Some(SECRET),
        "rtds" | "runtime" => Some(RUNTIME),
        "ecds" | "extension-config" | "extension_configs" => Some(EXTENSION_CONFIG),
        _ => None,
    };
    if let Some(url) = known {
        return Some(url.to_string());
    }
    let alias = alias.trim();
    if alias.starts_with(PREFIX) {
        Some(alias.to_string())
    } else if alias.contains('.') && !alias.contains('/') {
        Some(format!("{PREFIX}{alias}"))
    } else {
        None
    }
}

/// Whether a SotW response of the type holds the full state (LDS and CDS: a resource missing
/// from it is deleted; for the other types absence means nothing).
pub fn full_state(type_url: &str) -> bool {
    type_url == LISTENER || type_url == CLUSTER
}

/// The JSON (camelCase) spelling of a name field.
pub fn json_name(field: &str) -> &str {
    if field == "cluster_name" {
        "clusterName"
    } else {
        field
    }
}

/// The short alias of a type URL (`cds` ...), or the message name for other types.
pub fn short_name(type_url: &str) -> &str {
    ORDERED
        .iter()
        .find(|(_, url)| *url == type_url)
        .map(|(alias, _)| *alias)
        .unwrap_or_else(|| message_name(type_url))
}

/// The fully-qualified message name in a type URL (everything after the last `/`).
pub fn message_name(type_url: &str) -> &str {
    type_url.rsplit('/').next().unwrap_or(type_url)
}

/// The message name in a type URL written in a fixture, which must be exactly
/// `type.googleapis.com/<message name>`: xDS clients subscribe to (and match responses by) the
/// full URL, so a resource under any other prefix would be a separate type nobody asks for.
pub fn fixture_message_name(type_url: &str) -> Option<&str> {
    let name = type_url.strip_prefix(PREFIX)?;
    let valid = !name.is_empty()
        && name.split('.').all(|part| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    valid.then_some(name)
}

/// Position of a type in make-before-break order; unknown types sort last.
pub fn order(type_url: &str) -> usize {
    ORDERED
        .iter()
        .position(|(_, url)| *url == type_url)
        .unwrap_or(ORDERED.len())
}

/// The field holding a resource's name: `cluster_name` for endpoints, `name` for the rest.
pub fn name_field(type_url: &str) -> &'static str {
    if type_url == ENDPOINT {
        "cluster_name"
    } else {
        "name"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_to_full_urls() {
        assert_eq!(resolve("CDS").as_deref(), Some(CLUSTER));
        assert_eq!(resolve("endpoints").as_deref(), Some(ENDPOINT));
        assert_eq!(
            resolve("envoy.config.listener.v3.Listener").as_deref(),
            Some(LISTENER)
        );
        assert_eq!(resolve(ROUTE).as_deref(), Some(ROUTE));
        assert_eq!(resolve("nonsense"), None);
        assert_eq!(short_name(ENDPOINT), "eds");
        assert!(order(CLUSTER) < order(ENDPOINT) && order(LISTENER) < order(ROUTE));
    }

    #[test]
    fn type_url_prefix_other_than_googleapis_is_rejected() {
        assert_eq!(
            fixture_message_name(CLUSTER),
            Some("envoy.config.cluster.v3.Cluster")
        );
        for bad in [
            "example.com/envoy.config.cluster.v3.Cluster",
            "type.googleapis.con/envoy.config.cluster.v3.Cluster",
            "type.googleapis.com/x/envoy.config.cluster.v3.Cluster",
            "type.googleapis.com//envoy.config.cluster.v3.Cluster",
            "type.googleapis.com/envoy.config.cluster.v3.Cluster ",
            "type.googleapis.com/envoy..Cluster",
            "envoy.config.cluster.v3.Cluster",
            "type.googleapis.com/",
        ] {
            assert_eq!(fixture_message_name(bad), None, "{bad}");
        }
    }
}
