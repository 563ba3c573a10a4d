//! Typed decoding, generic over the resource type (the role Envoy's `SubscriptionBase<T>`
//! plays): an [`XdsResource`] knows its type URL and its name.

use prost::Message;
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::envoy::envoy::config::core::v3::TypedExtensionConfig;
use xdsloop_proto::envoy::envoy::config::endpoint::v3::ClusterLoadAssignment;
use xdsloop_proto::envoy::envoy::config::listener::v3::Listener;
use xdsloop_proto::envoy::envoy::config::route::v3::{
    RouteConfiguration, ScopedRouteConfiguration, VirtualHost,
};
use xdsloop_proto::envoy::envoy::extensions::transport_sockets::tls::v3::Secret;
use xdsloop_proto::envoy::envoy::service::runtime::v3::Runtime;
use xdsloop_proto::type_url;

use crate::core::event::{Event, Failure};
use crate::core::store::Applied;
use crate::error::ClientError;

/// A resource type that can be subscribed to with typed decoding.
pub trait XdsResource: Message + Default + Sized + Send + 'static {
    /// The type URL of `Self` (`type.googleapis.com/...`).
    const TYPE_URL: &'static str;
    /// The name xDS uses for the resource (`name`, or `cluster_name` for endpoints).
    fn name(&self) -> &str;
}

macro_rules! xds_resource {
    ($ty:ty, $url:expr, $field:ident) => {
        impl XdsResource for $ty {
            const TYPE_URL: &'static str = $url;
            fn name(&self) -> &str {
                &self.$field
            }
        }
    };
}

xds_resource!(Cluster, type_url::CLUSTER, name);
xds_resource!(ClusterLoadAssignment, type_url::ENDPOINT, cluster_name);
xds_resource!(Listener, type_url::LISTENER, name);
xds_resource!(RouteConfiguration, type_url::ROUTE, name);
xds_resource!(ScopedRouteConfiguration, type_url::SCOPED_ROUTE, name);
xds_resource!(VirtualHost, type_url::VIRTUAL_HOST, name);
xds_resource!(Secret, type_url::SECRET, name);
xds_resource!(Runtime, type_url::RUNTIME, name);
xds_resource!(TypedExtensionConfig, type_url::EXTENSION_CONFIG, name);

/// A decoded resource with its applied metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct Typed<T> {
    /// The resource's name.
    pub name: String,
    /// Its version (Delta: the resource's own; SotW: the response's).
    pub version: String,
    /// The resource, decoded.
    pub resource: T,
}

/// [`Event`] with the resources decoded as `T`.
#[derive(Clone, Debug, PartialEq)]
pub enum TypedEvent<T> {
    /// [`Event::Sotw`], decoded.
    Sotw {
        /// The type's version.
        version: String,
        /// Every held resource the subscription wants.
        resources: Vec<Typed<T>>,
    },
    /// [`Event::Delta`], decoded.
    Delta {
        /// The response's `system_version_info`.
        system_version: String,
        /// Resources added or changed.
        added: Vec<Typed<T>>,
        /// Names removed.
        removed: Vec<String>,
    },
    /// [`Event::Failed`]: the update was not applied.
    Failed(Failure),
    /// [`Event::Missing`]: these names do not exist.
    Missing(Vec<String>),
}

impl<T: XdsResource> TypedEvent<T> {
    /// Decodes an event of `T`'s type.
    pub fn decode(event: Event) -> Result<Self, ClientError> {
        Ok(match event {
            Event::Sotw {
                version, resources, ..
            } => TypedEvent::Sotw {
                version,
                resources: decode_all(resources)?,
            },
            Event::Delta {
                system_version,
                added,
                removed,
                ..
            } => TypedEvent::Delta {
                system_version,
                added: decode_all(added)?,
                removed,
            },
            Event::Failed { reason, .. } => TypedEvent::Failed(reason),
            Event::Missing { names, .. } => TypedEvent::Missing(names),
        })
    }
}

fn decode_all<T: XdsResource>(applied: Vec<Applied>) -> Result<Vec<Typed<T>>, ClientError> {
    applied
        .into_iter()
        .map(|a| {
            let resource = T::decode(a.bytes.as_ref()).map_err(|e| ClientError::Decode {
                type_url: T::TYPE_URL.to_string(),
                name: a.name.clone(),
                message: e.to_string(),
            })?;
            Ok(Typed {
                name: a.name,
                version: a.version,
                resource,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn typed_events_decode_resources() {
        let cla = ClusterLoadAssignment {
            cluster_name: "web".into(),
            ..Default::default()
        };
        let applied = Applied {
            name: "web".into(),
            version: "v1".into(),
            nonce: "n".into(),
            applied_at: SystemTime::UNIX_EPOCH,
            bytes: cla.encode_to_vec().into(),
        };
        let event = Event::Sotw {
            type_url: type_url::ENDPOINT.into(),
            version: "v1".into(),
            resources: vec![applied],
        };
        let TypedEvent::Sotw { resources, .. } =
            TypedEvent::<ClusterLoadAssignment>::decode(event).unwrap()
        else {
            panic!("expected SotW");
        };
        assert_eq!(resources[0].resource.name(), "web");
        assert_eq!(<Cluster as XdsResource>::TYPE_URL, type_url::CLUSTER);
    }
}
