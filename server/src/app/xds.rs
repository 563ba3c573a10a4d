//! The xDS port: ADS, the per-type services, REST-JSON, health and reflection, plus whatever
//! HTTP routes the caller adds (the admin routes), on one listener.

use std::{net::SocketAddr, sync::Arc};

use tokio::{net::TcpListener, sync::watch};
use tracing::info;
use xdsloop_proto::{Codec, csds::CSDS_SERVICE, services::ADS_SERVICE};

use crate::{
    admin::csds::service::Csds,
    admin::registry::Registry,
    app::listener::{self, HttpServer},
    error::Error,
    faults::scenario::Scenarios,
    judge::Mode,
    net::{Limits, Listening, close::Closer, incoming::Accept, refusal::NetStats},
    replay::Replay,
    snapshot::Snapshot,
    transport::ads::Ads,
    transport::discovery::Discovery,
    transport::introspection::{self, ServingReporter},
    transport::outage::ServerFaults,
    transport::per_type::{self, PerType},
    transport::rest::{self, Rest, faults::RestFaults},
    transport::unary::Fetcher,
};

/// A running gRPC server. Dropping it stops the server without waiting; [`shutdown`] waits.
///
/// [`shutdown`]: GrpcServer::shutdown
#[derive(Debug)]
pub struct GrpcServer {
    http: HttpServer,
    registry: Registry,
    scenarios: Scenarios,
    health: ServingReporter,
}

impl GrpcServer {
    /// The bound address (the real port when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.http.addr()
    }

    /// Open streams and their per-type state.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The fault scenario its streams follow ([`Scenarios::set`] changes it at once).
    pub fn scenarios(&self) -> &Scenarios {
        &self.scenarios
    }

    /// Ends every stream, stops accepting, and waits for the server to finish (closing the
    /// connections still open after a grace of 2 s).
    pub async fn shutdown(self) -> Result<(), Error> {
        // Health watchers (load balancers, grpc_health_probe) hear it before streams end.
        self.health.not_serving().await;
        self.http.shutdown().await
    }
}

/// Binds `listen` (port 0 picks a free port) and serves ADS (SotW and Delta) and the per-type
/// services from `snapshots`, with responses up to `max_message_bytes` (S13) and the default
/// [`Limits`], REST-JSON on the same port, plus gRPC health checking and reflection.
/// REST-JSON bodies use the Envoy API only ([`start`](super::start) adds the user's
/// `--descriptor-set` types).
pub async fn serve(
    listen: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    max_message_bytes: usize,
) -> Result<GrpcServer, Error> {
    serve_with_codec(listen, snapshots, max_message_bytes, Codec::envoy()).await
}

/// [`serve`], writing REST-JSON resources with `codec` (the Envoy API plus the user's
/// `--descriptor-set` types).
pub(crate) async fn serve_with_codec(
    listen: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    max_message_bytes: usize,
    codec: Codec,
) -> Result<GrpcServer, Error> {
    let limits = Limits::default();
    let port = XdsPort {
        listener: listen_on(listen).await?,
        max_message_bytes,
        listening: Listening {
            limits,
            stats: NetStats::new(limits.max_connections),
            tls: None,
        },
        conformance: Mode::Report,
        replay: None,
        scenarios: Scenarios::new(),
    };
    let no_admin = Http {
        routes: axum::Router::new(),
        csds: None,
    };
    let server = port
        .serve(snapshots, Registry::new(), codec, no_admin)
        .await?;
    let addr = server.addr();
    info!(%addr, "xDS listening on {addr} (ADS and per-type services: SotW, Delta, Fetch; REST-JSON)");
    Ok(server)
}

/// [`serve`] for a server started from code (the test kit): streams are listed in `registry`,
/// so whoever listens on its bus before this call hears every stream from the first; they
/// follow `scenarios` from the first request (a scenario installed before this call is in
/// force for the first client); with `admin`, the admin routes (`/scenario` included) and
/// CSDS are served on the xDS port too; clients are judged as `conformance` says.
#[cfg(feature = "testkit")]
pub(crate) async fn serve_in_process(
    listen: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    registry: Registry,
    scenarios: Scenarios,
    max_message_bytes: usize,
    admin: bool,
    conformance: Mode,
) -> Result<GrpcServer, Error> {
    let codec = Codec::envoy();
    let http = match admin {
        true => {
            let state =
                crate::admin::Admin::new(registry.clone(), snapshots.clone(), None, codec.clone())
                    .with_scenarios(scenarios.clone());
            Http {
                csds: Some(state.csds()),
                routes: state.router(),
            }
        }
        false => Http {
            routes: axum::Router::new(),
            csds: None,
        },
    };
    let limits = Limits::default();
    let port = XdsPort {
        listener: listen_on(listen).await?,
        max_message_bytes,
        listening: Listening {
            limits,
            stats: NetStats::new(limits.max_connections),
            tls: None,
        },
        conformance,
        replay: None,
        scenarios,
    };
    port.serve(snapshots, registry, codec, http).await
}

/// Binds `listen`, naming the address in the error.
pub(crate) async fn listen_on(listen: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(listen)
        .await
        .map_err(|source| Error::Bind {
            addr: listen.to_string(),
            source,
        })
}

/// What the xDS port serves besides xDS: the admin routes (or what answers in their place),
/// on HTTP/1.1 and HTTP/2 alike, and CSDS when the admin is here.
pub(crate) struct Http {
    pub routes: axum::Router,
    pub csds: Option<Csds>,
}

/// A bound xDS port and how it serves.
pub(crate) struct XdsPort {
    pub listener: TcpListener,
    /// The response limit (S13).
    pub max_message_bytes: usize,
    pub listening: Listening,
    /// How each client is judged against the client rules (`--conformance`, `--strict`).
    pub conformance: Mode,
    /// `--replay`: the recording every stream serves instead of the snapshots.
    pub replay: Option<Arc<Replay>>,
    /// The fault scenario streams follow.
    pub scenarios: Scenarios,
}

impl XdsPort {
    /// Serves gRPC and REST-JSON here, plus `http`.
    pub(crate) async fn serve(
        self,
        snapshots: watch::Receiver<Arc<Snapshot>>,
        registry: Registry,
        codec: Codec,
        http: Http,
    ) -> Result<GrpcServer, Error> {
        let limits = self.listening.limits;
        let (stop, stopped) = watch::channel(false);
        let fetcher = Fetcher::new(snapshots.clone());
        let server_faults = ServerFaults::start(&self.scenarios, registry.clone(), stopped.clone());
        let discovery = Discovery::new(snapshots, registry.clone(), stopped.clone())
            .with_server_faults(server_faults)
            .with_max_message_bytes(self.max_message_bytes)
            .with_max_request_bytes(limits.max_request_bytes)
            .with_conformance(self.conformance)
            .with_replay(self.replay)
            .with_scenarios(self.scenarios.subscribe());
        let per_type = PerType::new(discovery.clone(), fetcher.clone());
        let mut routes = tonic::service::Routes::builder();
        routes.add_service(Ads::new(discovery));
        let mut xds_services = vec![ADS_SERVICE];
        xds_services.extend(per_type::add_to(&mut routes, per_type));
        if let Some(csds) = http.csds {
            routes.add_service(csds.service());
            xds_services.push(CSDS_SERVICE);
        }
        let health = introspection::add_to(&mut routes, &xds_services).await?;
        let faults = RestFaults::new(self.scenarios.clone(), registry.clone());
        let rest = Rest::new(fetcher, &codec, limits.max_request_bytes).with_faults(faults);
        let routes = rest::with_grpc(routes.routes(), rest.router().merge(http.routes));
        let accept = Accept {
            stats: self.listening.stats,
            tls: self.listening.tls,
            closer: Closer::new(),
            budget_bytes: limits.budget_bytes(),
            outages: Some(self.scenarios.outages().clone()),
        };
        let max_streams = limits.max_streams_per_connection;
        let http = listener::start(self.listener, routes, accept, max_streams, (stop, stopped))?;
        Ok(GrpcServer {
            http,
            registry,
            scenarios: self.scenarios,
            health,
        })
    }
}
