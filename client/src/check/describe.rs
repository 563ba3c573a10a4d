//! Responses as evidence: one short phrase each, with type, version, nonce and names, so a
//! failure can be matched against the server's own logs.

use xdsloop_proto::Codec;
use xdsloop_proto::discovery::{DeltaDiscoveryResponse, DiscoveryResponse};
use xdsloop_proto::type_url;

/// Names shown in one list before the rest is only counted.
const SHOWN: usize = 8;

/// The resource names in a SotW response, decoded from each `Any` by its own type URL, or by
/// the response's when that fails (an `Any` mislabelled is judged elsewhere; its name is still
/// read); `<undecodable #n>` for one neither reads.
pub(super) fn sotw_names(codec: &Codec, response: &DiscoveryResponse) -> Vec<String> {
    let resources = response.resources.iter().enumerate();
    resources
        .map(|(i, any)| {
            codec
                .resource_name(&any.type_url, &any.value)
                .or_else(|_| codec.resource_name(&response.type_url, &any.value))
                .unwrap_or_else(|_| format!("<undecodable #{}>", i + 1))
        })
        .collect()
}

/// The names a Delta response sends (resources with a body) and removes.
pub(super) fn delta_names(response: &DeltaDiscoveryResponse) -> (Vec<String>, Vec<String>) {
    let sent = response.resources.iter().filter(|r| r.resource.is_some());
    let mut removed: Vec<String> = response.removed_resources.clone();
    // A Resource without a body is the other way the spec has to say "does not exist".
    let unset = response.resources.iter().filter(|r| r.resource.is_none());
    removed.extend(unset.map(|r| r.name.clone()));
    (sent.map(|r| r.name.clone()).collect(), removed)
}

/// `cds v"v7" nonce "3-4" [web, api]`
pub(super) fn sotw(codec: &Codec, response: &DiscoveryResponse) -> String {
    let (short, version) = (short(&response.type_url), &response.version_info);
    let names = list(&sotw_names(codec, response));
    format!("{short} v{version:?} nonce {:?} {names}", response.nonce)
}

/// `eds nonce "3-4" +[a, b] -[x]`
pub(super) fn delta(response: &DeltaDiscoveryResponse) -> String {
    let (sent, removed) = delta_names(response);
    let short = short(&response.type_url);
    let mut text = format!("{short} nonce {:?} +{}", response.nonce, list(&sent));
    if !removed.is_empty() {
        text.push_str(&format!(" -{}", list(&removed)));
    }
    text
}

/// `[a, b, c]`, or the first few and how many more.
pub(super) fn list<S: AsRef<str>>(names: &[S]) -> String {
    let shown: Vec<&str> = names.iter().take(SHOWN).map(AsRef::as_ref).collect();
    let more = names.len().saturating_sub(SHOWN);
    if more > 0 {
        format!("[{}, … {more} more]", shown.join(", "))
    } else {
        format!("[{}]", shown.join(", "))
    }
}

/// `cds`, `eds`, … or the message name for a type without an alias.
pub(super) fn short(url: &str) -> &str {
    type_url::short_name(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdsloop_proto::discovery::WireResource;

    #[test]
    fn lists_are_cut_after_eight_names() {
        let names: Vec<String> = (0..10).map(|i| format!("n{i}")).collect();
        assert_eq!(list(&names), "[n0, n1, n2, n3, n4, n5, n6, n7, … 2 more]");
        assert_eq!(list(&["a"]), "[a]");
    }

    #[test]
    fn delta_names_count_bodiless_resources_as_removed() {
        let response = DeltaDiscoveryResponse {
            type_url: type_url::ENDPOINT.into(),
            nonce: "7".into(),
            removed_resources: vec!["x".into()],
            resources: vec![WireResource {
                name: "y".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(delta(&response), "eds nonce \"7\" +[] -[x, y]");
    }
}
