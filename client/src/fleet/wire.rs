//! Just enough of the xDS wire format to follow names and versions.
//!
//! SotW responses, the bulk of a large fleet's traffic, are read in place ([`SotwView`]: every
//! field a slice of the received message, nothing allocated per resource). Delta responses and
//! the resources the fleet follows (clusters, listeners) use prost messages that carry only
//! the fields the fleet reads, under their real field numbers; prost skips every other field
//! without decoding it. Either way the full Envoy messages are never built, which is what keeps
//! thousands of simulated nodes cheap.

use bytes::Bytes;
use prost::Message;
use prost::encoding::decode_varint;

/// `envoy.service.discovery.v3.DeltaDiscoveryResponse`, minus control plane and errors.
#[derive(Clone, PartialEq, Message)]
pub struct DeltaResponse {
    #[prost(string, tag = "1")]
    pub system_version_info: String,
    #[prost(message, repeated, tag = "2")]
    pub resources: Vec<DeltaResource>,
    #[prost(string, tag = "4")]
    pub type_url: String,
    #[prost(string, tag = "5")]
    pub nonce: String,
    #[prost(string, repeated, tag = "6")]
    pub removed_resources: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub removed_resource_names: Vec<Named>,
}

/// `envoy.service.discovery.v3.Resource`: name, version and the resource itself.
#[derive(Clone, PartialEq, Message)]
pub struct DeltaResource {
    #[prost(string, tag = "1")]
    pub version: String,
    #[prost(message, optional, tag = "2")]
    pub resource: Option<RawAny>,
    #[prost(string, tag = "3")]
    pub name: String,
}

/// `google.protobuf.Any` with its value left encoded. The type URL is read as bytes (same wire
/// type as a string) so no `String` is built per resource.
#[derive(Clone, PartialEq, Message)]
pub struct RawAny {
    #[prost(bytes = "bytes", tag = "1")]
    pub type_url: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub value: Bytes,
}

/// `ResourceName` (Delta `removed_resource_names`): field 1 is the name. Read as bytes (same
/// wire type as a string): a slice of the received buffer, no allocation.
#[derive(Clone, PartialEq, Message)]
pub struct Named {
    #[prost(bytes = "bytes", tag = "1")]
    pub name: Bytes,
}

/// `envoy.config.cluster.v3.Cluster`: name, discovery type, EDS service name.
#[derive(Clone, PartialEq, Message)]
pub struct Cluster {
    #[prost(string, tag = "1")]
    pub name: String,
    /// `type` (the `cluster_discovery_type` oneof's enum arm); `EDS` = 3.
    #[prost(int32, optional, tag = "2")]
    pub discovery_type: Option<i32>,
    #[prost(message, optional, tag = "3")]
    pub eds_cluster_config: Option<EdsClusterConfig>,
}

/// `Cluster.DiscoveryType.EDS`.
pub const DISCOVERY_TYPE_EDS: i32 = 3;

#[derive(Clone, PartialEq, Message)]
pub struct EdsClusterConfig {
    #[prost(string, tag = "2")]
    pub service_name: String,
}

/// `envoy.config.listener.v3.Listener`: the places an HTTP connection manager can be.
#[derive(Clone, PartialEq, Message)]
pub struct Listener {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub filter_chains: Vec<FilterChain>,
    #[prost(message, optional, tag = "19")]
    pub api_listener: Option<ApiListener>,
    #[prost(message, optional, tag = "25")]
    pub default_filter_chain: Option<FilterChain>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FilterChain {
    #[prost(message, repeated, tag = "3")]
    pub filters: Vec<Filter>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Filter {
    #[prost(message, optional, tag = "4")]
    pub typed_config: Option<RawAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ApiListener {
    #[prost(message, optional, tag = "1")]
    pub api_listener: Option<RawAny>,
}

/// `HttpConnectionManager`: only its `rds` arm.
#[derive(Clone, PartialEq, Message)]
pub struct HttpConnectionManager {
    #[prost(message, optional, tag = "3")]
    pub rds: Option<Rds>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Rds {
    #[prost(string, tag = "2")]
    pub route_config_name: String,
}

pub const HCM_TYPE_URL: &str = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";

impl Cluster {
    /// The EDS name this cluster subscribes to, if it is an EDS cluster.
    pub fn eds_name(&self) -> Option<&str> {
        if self.discovery_type != Some(DISCOVERY_TYPE_EDS) {
            return None;
        }
        let service = self
            .eds_cluster_config
            .as_ref()
            .map(|c| c.service_name.as_str())
            .filter(|s| !s.is_empty());
        Some(service.unwrap_or(&self.name))
    }
}

impl Listener {
    /// RDS names of the listener's HTTP connection managers: filter chains, the default filter
    /// chain and the `api_listener` (proxyless gRPC). A manager that does not decode adds none.
    pub fn route_names(&self) -> Vec<String> {
        let chains = self.filter_chains.iter().chain(&self.default_filter_chain);
        let filters = chains.flat_map(|c| &c.filters);
        let managers = filters.filter_map(|f| f.typed_config.as_ref()).chain(
            self.api_listener
                .as_ref()
                .and_then(|a| a.api_listener.as_ref()),
        );
        managers
            .filter(|any| any.type_url.as_ref() == HCM_TYPE_URL.as_bytes())
            .filter_map(|any| HttpConnectionManager::decode(any.value.clone()).ok())
            .filter_map(|hcm| hcm.rds.map(|rds| rds.route_config_name))
            .filter(|name| !name.is_empty())
            .collect()
    }
}

/// A SotW response read in place: every field is a slice of the received message. A response
/// of 1,000 resources costs no allocation per resource (the prost structs above would take a
/// reference-counted `Bytes` for each payload and type URL).
#[derive(Debug, Default)]
pub struct SotwView<'a> {
    pub version_info: &'a str,
    pub type_url: &'a str,
    pub nonce: &'a str,
    pub resources: Vec<AnyRef<'a>>,
}

/// `google.protobuf.Any`, in place.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyRef<'a> {
    pub type_url: &'a [u8],
    pub value: &'a [u8],
}

impl<'a> SotwView<'a> {
    pub fn parse(message: &'a [u8]) -> Result<Self, String> {
        Self::parse_parts([message])
    }

    /// Parses a message given as consecutive parts. It fails when a field straddles two parts
    /// (every field must lie within one part); the caller then parses a contiguous copy.
    pub fn parse_parts(parts: impl IntoIterator<Item = &'a [u8]>) -> Result<Self, String> {
        let mut view = SotwView::default();
        let text = |v: &'a [u8]| std::str::from_utf8(v).map_err(|e| format!("not UTF-8: {e}"));
        for part in parts {
            fields(part, |tag, value| {
                match tag {
                    1 => view.version_info = text(value)?,
                    2 => view.resources.push(AnyRef::parse(value)?),
                    4 => view.type_url = text(value)?,
                    5 => view.nonce = text(value)?,
                    _ => {}
                }
                Ok(())
            })?;
        }
        Ok(view)
    }
}

impl<'a> AnyRef<'a> {
    fn parse(message: &'a [u8]) -> Result<Self, String> {
        let mut any = AnyRef::default();
        fields(message, |tag, value| {
            match tag {
                1 => any.type_url = value,
                2 => any.value = value,
                _ => {}
            }
            Ok(())
        })?;
        Ok(any)
    }
}

/// Field 1 of a message, in place: the name of a `Listener`, `RouteConfiguration`,
/// `ClusterLoadAssignment` (`cluster_name`) or `ResourceName`; empty when absent.
pub fn name_in_place(message: &[u8]) -> Result<&[u8], String> {
    let mut name: &[u8] = &[];
    fields(message, |tag, value| {
        if tag == 1 {
            name = value;
        }
        Ok(())
    })?;
    Ok(name)
}

/// Calls `each` with the tag and bytes of every length-delimited field of `message`, in order,
/// skipping the other wire types (protobuf wire format, no schema needed).
fn fields<'a>(
    mut message: &'a [u8],
    mut each: impl FnMut(u32, &'a [u8]) -> Result<(), String>,
) -> Result<(), String> {
    let varint = |buf: &mut &'a [u8]| decode_varint(buf).map_err(|e| e.to_string());
    while !message.is_empty() {
        let key = varint(&mut message)?;
        let skip = match key & 7 {
            0 => {
                varint(&mut message)?;
                0
            }
            1 => 8,
            2 => {
                let len = usize::try_from(varint(&mut message)?).unwrap_or(usize::MAX);
                let value = message.get(..len).ok_or("a field runs past the end")?;
                each((key >> 3) as u32, value)?;
                len
            }
            5 => 4,
            other => return Err(format!("unsupported wire type {other}")),
        };
        message = message.get(skip..).ok_or("a field runs past the end")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdsloop_proto::envoy::envoy::config::cluster::v3 as full_cluster;
    use xdsloop_proto::envoy::envoy::config::listener::v3 as full_listener;
    use xdsloop_proto::envoy::envoy::extensions::filters::network::http_connection_manager::v3 as hcm;
    use xdsloop_proto::envoy::google::protobuf::Any;

    fn full_eds_cluster(name: &str, service: &str) -> full_cluster::Cluster {
        use full_cluster::cluster::{ClusterDiscoveryType, DiscoveryType, EdsClusterConfig};
        full_cluster::Cluster {
            name: name.into(),
            cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
            eds_cluster_config: Some(EdsClusterConfig {
                service_name: service.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn sotw_view_reads_the_real_encoding_in_place_and_rejects_a_truncated_one() {
        use xdsloop_proto::discovery::DiscoveryResponse;
        use xdsloop_proto::envoy::envoy::config::core::v3::ControlPlane;
        let full = DiscoveryResponse {
            version_info: "v1".into(),
            resources: vec![
                Any {
                    type_url: "t".into(),
                    value: b"one".to_vec(),
                },
                Any {
                    type_url: "t".into(),
                    value: full_eds_cluster("web", "").encode_to_vec(),
                },
            ],
            canary: true,
            type_url: "t".into(),
            nonce: "n-1".into(),
            control_plane: Some(ControlPlane {
                identifier: "cp".into(),
            }),
            ..Default::default()
        };
        let bytes = full.encode_to_vec();
        let view = SotwView::parse(&bytes).unwrap();
        assert_eq!(
            (view.version_info, view.type_url, view.nonce),
            ("v1", "t", "n-1")
        );
        let values: Vec<&[u8]> = view.resources.iter().map(|r| r.value).collect();
        assert_eq!(values, [b"one".as_slice(), &full.resources[1].value]);
        assert_eq!(name_in_place(view.resources[1].value).unwrap(), b"web");
        assert!(SotwView::parse(&bytes[..bytes.len() - 1]).is_err());
        // Parts split between fields parse in place; a split inside a field is refused.
        // version_info (2 + 2 bytes), then the first resource (2 + its length).
        let first = 4 + 2 + full.resources[0].encoded_len();
        let (a, b) = bytes.split_at(first);
        let parts = SotwView::parse_parts([a, b]).unwrap();
        assert_eq!((parts.resources.len(), parts.nonce), (2, "n-1"));
        let (a, b) = bytes.split_at(first + 3);
        assert!(SotwView::parse_parts([a, b]).is_err());
    }

    #[test]
    fn minimal_cluster_reads_the_eds_name_from_the_real_encoding() {
        let bytes = full_eds_cluster("web", "").encode_to_vec();
        assert_eq!(
            Cluster::decode(bytes.as_slice()).unwrap().eds_name(),
            Some("web")
        );
        let bytes = full_eds_cluster("web", "web-svc").encode_to_vec();
        let cluster = Cluster::decode(bytes.as_slice()).unwrap();
        assert_eq!(cluster.eds_name(), Some("web-svc"));
        let static_cluster = full_cluster::Cluster {
            name: "static".into(),
            ..Default::default()
        };
        let cluster = Cluster::decode(static_cluster.encode_to_vec().as_slice()).unwrap();
        assert_eq!(cluster.name, "static");
        assert_eq!(cluster.eds_name(), None);
    }

    #[test]
    fn minimal_listener_finds_rds_names_in_chains_and_api_listener() {
        let manager = |route: &str| Any {
            type_url: HCM_TYPE_URL.into(),
            value: hcm::HttpConnectionManager {
                route_specifier: Some(hcm::http_connection_manager::RouteSpecifier::Rds(
                    hcm::Rds {
                        route_config_name: route.into(),
                        ..Default::default()
                    },
                )),
                ..Default::default()
            }
            .encode_to_vec(),
        };
        let chain = |route: &str| full_listener::FilterChain {
            filters: vec![full_listener::Filter {
                name: "hcm".into(),
                config_type: Some(full_listener::filter::ConfigType::TypedConfig(manager(
                    route,
                ))),
            }],
            ..Default::default()
        };
        let listener = full_listener::Listener {
            name: "ingress".into(),
            filter_chains: vec![chain("a")],
            default_filter_chain: Some(chain("b")),
            api_listener: Some(full_listener::ApiListener {
                api_listener: Some(manager("c")),
            }),
            ..Default::default()
        };
        let minimal = Listener::decode(listener.encode_to_vec().as_slice()).unwrap();
        assert_eq!(minimal.name, "ingress");
        assert_eq!(minimal.route_names(), vec!["a", "b", "c"]);
    }
}
