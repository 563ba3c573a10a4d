//! Standard gRPC introspection on the xDS port, so `grpcurl`, `grpc_health_probe` and load
//! balancer health checks work without knowing anything about xdsloop:
//! - `grpc.health.v1.Health`: `SERVING` for the server ("") and every xDS service while it runs,
//!   `NOT_SERVING` once shutdown starts;
//! - `grpc.reflection.v1` and `v1alpha` (older `grpcurl` only speak v1alpha): the services the
//!   server really serves, described by the complete Envoy API descriptor set.

use tonic::service::RoutesBuilder;
use tonic_health::{ServingStatus, server::HealthReporter};
use tonic_reflection::server as reflection;

use crate::error::Error;

pub(crate) const HEALTH_SERVICE: &str = "grpc.health.v1.Health";
pub(crate) const REFLECTION_V1: &str = "grpc.reflection.v1.ServerReflection";
pub(crate) const REFLECTION_V1ALPHA: &str = "grpc.reflection.v1alpha.ServerReflection";

/// Adds health checking and reflection to `routes`, for a server that serves `xds_services`
/// (fully-qualified gRPC service names, e.g.
/// `envoy.service.discovery.v3.AggregatedDiscoveryService`). The returned handle reports
/// shutdown.
pub(crate) async fn add_to(
    routes: &mut RoutesBuilder,
    xds_services: &[&str],
) -> Result<ServingReporter, Error> {
    let (reporter, health) = tonic_health::server::health_reporter();
    for service in xds_services {
        let serving = ServingStatus::Serving;
        reporter.set_service_status(service, serving).await;
    }
    let mut advertised: Vec<&str> = xds_services.to_vec();
    advertised.extend([HEALTH_SERVICE, REFLECTION_V1, REFLECTION_V1ALPHA]);
    let fail = |e: reflection::Error| Error::Transport(format!("gRPC reflection: {e}"));
    routes
        .add_service(health)
        .add_service(builder(&advertised).build_v1().map_err(fail)?)
        .add_service(builder(&advertised).build_v1alpha().map_err(fail)?);
    Ok(ServingReporter {
        reporter,
        services: xds_services.iter().map(|s| s.to_string()).collect(),
    })
}

/// Turns health to `NOT_SERVING` so balancers stop sending new clients before streams end.
#[derive(Debug, Clone)]
pub(crate) struct ServingReporter {
    reporter: HealthReporter,
    services: Vec<String>,
}

impl ServingReporter {
    /// Reports `NOT_SERVING` to checks and watchers, then ends every health `Watch` stream:
    /// graceful shutdown waits for open streams, and a watch never ends by itself.
    pub(crate) async fn not_serving(&self) {
        let mut reporter = self.reporter.clone();
        let names = std::iter::once("").chain(self.services.iter().map(String::as_str));
        let names: Vec<&str> = names.collect();
        for name in &names {
            let status = ServingStatus::NotServing;
            reporter.set_service_status(name, status).await;
        }
        // Dropping a status's sender ends its watch streams once they have delivered the
        // last value (NOT_SERVING).
        for name in &names {
            reporter.clear_service_status(name).await;
        }
    }
}

fn builder<'a>(advertised: &[&str]) -> reflection::Builder<'a> {
    let mut builder = reflection::Builder::configure()
        .register_encoded_file_descriptor_set(xdsloop_proto::codec::envoy_descriptor_set())
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET);
    // Advertise what is served, not every service the Envoy API defines.
    for name in advertised {
        builder = builder.with_service_name(*name);
    }
    builder
}
