//! Just enough of the xDS wire format to follow names and versions.
//!
//! SotW responses, the bulk of a large fleet's traffic, are read in place ([`SotwView`]: every
//! field a slice of the received message, nothing allocated per resource), and so are clusters
//! ([`ClusterRef`]). Delta responses and listeners use prost messages that carry only the
//! fields the fleet reads, under their real field numbers; prost skips every other field
//! without decoding it. Either way the full Envoy messages are never built, which is what keeps
//! thousands of simulated nodes cheap.

use bytes::Bytes;
use prost::Message;
use prost::encoding::decode_varint;

/// `envoy.service.discovery.v3.DeltaDiscoveryResponse`, minus control plane and errors.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct DeltaResponse {
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
pub(crate) struct DeltaResource {
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
pub(crate) struct RawAny {
    #[prost(bytes = "bytes", tag = "1")]
    pub type_url: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub value: Bytes,
}

/// `ResourceName` (Delta `removed_resource_names`): field 1 is the name. Read as bytes (same
/// wire type as a string): a slice of the received buffer, no allocation.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Named {
    #[prost(bytes = "bytes", tag = "1")]
    pub name: Bytes,
}

/// `Cluster.DiscoveryType.EDS`.
const DISCOVERY_TYPE_EDS: u64 = 3;

/// `envoy.config.cluster.v3.Cluster`, read in place: its name and the EDS name it needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClusterRef<'a> {
    pub name: &'a str,
    /// The EDS name, if this is an EDS cluster: `eds_cluster_config.service_name`, or the
    /// cluster's name when that is empty.
    pub eds_name: Option<&'a str>,
}

impl<'a> ClusterRef<'a> {
    pub(crate) fn parse(message: &'a [u8]) -> Result<Self, String> {
        let text = |v: &'a [u8]| std::str::from_utf8(v).map_err(|e| format!("not UTF-8: {e}"));
        let (mut name, mut eds, mut service) = ("", false, "");
        fields(message, |tag, field| {
            match (tag, field) {
                (1, Field::Bytes(v)) => name = text(v)?,
                // `type` and `cluster_type` are one oneof: the last one on the wire wins.
                (2, Field::Varint(t)) => eds = t == DISCOVERY_TYPE_EDS,
                (38, Field::Bytes(_)) => eds = false,
                (3, Field::Bytes(config)) => fields(config, |tag, field| {
                    if let (2, Field::Bytes(v)) = (tag, field) {
                        service = text(v)?;
                    }
                    Ok(())
                })?,
                _ => {}
            }
            Ok(())
        })?;
        let eds_name = eds.then_some(if service.is_empty() { name } else { service });
        Ok(Self { name, eds_name })
    }
}

/// `envoy.config.listener.v3.Listener`: the places an HTTP connection manager can be.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Listener {
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
pub(crate) struct FilterChain {
    #[prost(message, repeated, tag = "3")]
    pub filters: Vec<Filter>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Filter {
    #[prost(message, optional, tag = "4")]
    pub typed_config: Option<RawAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct ApiListener {
    #[prost(message, optional, tag = "1")]
    pub api_listener: Option<RawAny>,
}

/// `HttpConnectionManager`: only its `rds` arm.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct HttpConnectionManager {
    #[prost(message, optional, tag = "3")]
    pub rds: Option<Rds>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Rds {
    #[prost(string, tag = "2")]
    pub route_config_name: String,
}

pub(crate) const HCM_TYPE_URL: &str = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";

impl Listener {
    /// RDS names of the listener's HTTP connection managers: filter chains, the default filter
    /// chain and the `api_listener` (proxyless gRPC). A manager that does not decode adds none.
    pub(crate) fn route_names(&self) -> Vec<String> {
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
pub(crate) struct SotwView<'a> {
    pub version_info: &'a str,
    pub type_url: &'a str,
    pub nonce: &'a str,
    pub resources: Vec<AnyRef<'a>>,
}

/// `google.protobuf.Any`, in place.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AnyRef<'a> {
    pub type_url: &'a [u8],
    pub value: &'a [u8],
}

impl<'a> SotwView<'a> {
    pub(crate) fn parse(message: &'a [u8]) -> Result<Self, String> {
        Self::parse_parts([message])
    }

    /// Parses a message given as consecutive parts. It fails when a field straddles two parts
    /// (every field must lie within one part); the caller then parses a contiguous copy.
    pub(crate) fn parse_parts(parts: impl IntoIterator<Item = &'a [u8]>) -> Result<Self, String> {
        let mut view = SotwView::default();
        let text = |v: &'a [u8]| std::str::from_utf8(v).map_err(|e| format!("not UTF-8: {e}"));
        for part in parts {
            fields(part, |tag, field| {
                let Field::Bytes(value) = field else {
                    return Ok(());
                };
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
        fields(message, |tag, field| {
            match (tag, field) {
                (1, Field::Bytes(value)) => any.type_url = value,
                (2, Field::Bytes(value)) => any.value = value,
                _ => {}
            }
            Ok(())
        })?;
        Ok(any)
    }
}

/// Field 1 of a message, in place: the name of a `Listener`, `RouteConfiguration`,
/// `ClusterLoadAssignment` (`cluster_name`) or `ResourceName`; empty when absent.
pub(crate) fn name_in_place(message: &[u8]) -> Result<&[u8], String> {
    let mut name: &[u8] = &[];
    fields(message, |tag, field| {
        if let (1, Field::Bytes(value)) = (tag, field) {
            name = value;
        }
        Ok(())
    })?;
    Ok(name)
}

/// One field as [`fields`] hands it over.
#[derive(Clone, Copy, Debug)]
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// Calls `each` with the tag and value of every varint and length-delimited field of
/// `message`, in order, skipping fixed-width ones (protobuf wire format, no schema needed).
fn fields<'a>(
    mut message: &'a [u8],
    mut each: impl FnMut(u32, Field<'a>) -> Result<(), String>,
) -> Result<(), String> {
    let varint = |buf: &mut &'a [u8]| decode_varint(buf).map_err(|e| e.to_string());
    while !message.is_empty() {
        let key = varint(&mut message)?;
        let tag = u32::try_from(key >> 3).map_err(|_| "field number out of range")?;
        let skip = match key & 7 {
            0 => {
                each(tag, Field::Varint(varint(&mut message)?))?;
                0
            }
            1 => 8,
            2 => {
                let len = usize::try_from(varint(&mut message)?).unwrap_or(usize::MAX);
                let value = message.get(..len).ok_or("a field runs past the end")?;
                each(tag, Field::Bytes(value))?;
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
mod tests;
