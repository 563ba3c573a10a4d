//! Client Status Discovery Service (`envoy.service.status.v3`), the parts both ends share: the
//! service's name, the messages, `node_matchers` and the timestamps the answers carry. The
//! server answers CSDS about every client it serves, the client about itself.

use std::time::{Duration, SystemTime};

pub use crate::envoy::envoy::admin::v3::{ClientResourceStatus, UpdateFailureState};
pub use crate::envoy::envoy::service::status::v3::{
    ClientConfig, ClientStatusRequest, ClientStatusResponse, ConfigStatus,
    client_config::GenericXdsConfig,
};
use crate::envoy::envoy::r#type::matcher::v3::{
    NodeMatcher, StringMatcher, string_matcher::MatchPattern,
};
use crate::envoy::google::protobuf::Timestamp;

/// gRPC service name of CSDS.
pub const CSDS_SERVICE: &str = "envoy.service.status.v3.ClientStatusDiscoveryService";

/// A `node_matchers` entry this implementation cannot evaluate: answering as if it matched
/// (or did not) would silently show the wrong clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

/// Whether a client with `node_id` is selected by `matchers`: no matchers select everyone,
/// several select a client any one of them matches (the CSDS API's OR semantics). Node ids
/// are matched with `exact`, `prefix`, `suffix` and `contains`, each with `ignore_case`;
/// `safe_regex`, custom matchers and `node_metadatas` are [`Unsupported`].
pub fn node_matches(matchers: &[NodeMatcher], node_id: &str) -> Result<bool, Unsupported> {
    if matchers.is_empty() {
        return Ok(true);
    }
    let mut any = false;
    for matcher in matchers {
        // Check every matcher, so an unsupported one is refused whatever the order.
        any |= one_matches(matcher, node_id)?;
    }
    Ok(any)
}

fn one_matches(matcher: &NodeMatcher, node_id: &str) -> Result<bool, Unsupported> {
    if !matcher.node_metadatas.is_empty() {
        return Err(Unsupported(
            "node_matchers[].node_metadatas is not supported: match on node_id".into(),
        ));
    }
    match &matcher.node_id {
        // A matcher without a node_id condition matches every node.
        None => Ok(true),
        Some(string) => string_matches(string, node_id),
    }
}

fn string_matches(matcher: &StringMatcher, value: &str) -> Result<bool, Unsupported> {
    let fold = |s: &str| {
        if matcher.ignore_case {
            s.to_lowercase()
        } else {
            s.to_string()
        }
    };
    let value = fold(value);
    Ok(match &matcher.match_pattern {
        Some(MatchPattern::Exact(p)) => value == fold(p),
        Some(MatchPattern::Prefix(p)) => value.starts_with(&fold(p)),
        Some(MatchPattern::Suffix(p)) => value.ends_with(&fold(p)),
        Some(MatchPattern::Contains(p)) => value.contains(&fold(p)),
        Some(MatchPattern::SafeRegex(_)) | Some(MatchPattern::Custom(_)) => {
            return Err(Unsupported(
                "node_matchers[].node_id: safe_regex and custom matchers are not supported; \
                 use exact, prefix, suffix or contains"
                    .into(),
            ));
        }
        None => true,
    })
}

/// A protobuf `Timestamp` of `at` (times before 1970 are clamped to the epoch).
pub fn timestamp(at: SystemTime) -> Timestamp {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp {
        seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(since.subsec_nanos()).unwrap_or(0),
    }
}

/// The `SystemTime` of a protobuf `Timestamp` (negative ones are the epoch).
pub fn system_time(at: &Timestamp) -> SystemTime {
    let seconds = u64::try_from(at.seconds).unwrap_or(0);
    let nanos = u32::try_from(at.nanos).unwrap_or(0);
    SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::envoy::r#type::matcher::v3::RegexMatcher;

    fn id(pattern: MatchPattern, ignore_case: bool) -> NodeMatcher {
        NodeMatcher {
            node_id: Some(StringMatcher {
                match_pattern: Some(pattern),
                ignore_case,
            }),
            node_metadatas: Vec::new(),
        }
    }

    #[test]
    fn s17_node_matchers_select_by_node_id_with_or_semantics() {
        assert_eq!(node_matches(&[], "any"), Ok(true));
        let exact = id(MatchPattern::Exact("envoy-1".into()), false);
        assert_eq!(
            node_matches(std::slice::from_ref(&exact), "envoy-1"),
            Ok(true)
        );
        assert_eq!(
            node_matches(std::slice::from_ref(&exact), "ENVOY-1"),
            Ok(false)
        );
        let folded = id(MatchPattern::Exact("ENVOY-1".into()), true);
        assert_eq!(node_matches(&[folded], "envoy-1"), Ok(true));
        let prefix = id(MatchPattern::Prefix("grpc-".into()), false);
        let suffix = id(MatchPattern::Suffix("-b".into()), false);
        let contains = id(MatchPattern::Contains("mid".into()), false);
        assert_eq!(
            node_matches(std::slice::from_ref(&prefix), "grpc-a"),
            Ok(true)
        );
        assert_eq!(
            node_matches(std::slice::from_ref(&suffix), "node-b"),
            Ok(true)
        );
        assert_eq!(node_matches(&[contains], "a-mid-z"), Ok(true));
        assert_eq!(
            node_matches(&[prefix.clone(), suffix.clone()], "x-b"),
            Ok(true)
        );
        assert_eq!(node_matches(&[prefix, suffix, exact], "other"), Ok(false));
    }

    #[test]
    fn s17_regex_and_metadata_matchers_are_refused_not_guessed() {
        let regex = id(MatchPattern::SafeRegex(RegexMatcher::default()), false);
        let error = node_matches(&[regex], "n").unwrap_err();
        assert!(error.0.contains("safe_regex"), "{error:?}");
        let metadata = NodeMatcher {
            node_id: None,
            node_metadatas: vec![Default::default()],
        };
        let always = id(MatchPattern::Prefix(String::new()), false);
        let error = node_matches(&[always, metadata], "n").unwrap_err();
        assert!(error.0.contains("node_metadatas"), "{error:?}");
    }

    #[test]
    fn timestamps_round_trip() {
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_000_000);
        let stamp = timestamp(at);
        assert_eq!((stamp.seconds, stamp.nanos), (1_700_000_000, 123_000_000));
        assert_eq!(system_time(&stamp), at);
    }
}
