//! The accept loop: TCP connections in, [`Conn`]s out, as the stream the HTTP server serves.
//!
//! Every connection first takes a permit (`--max-connections`); over the limit it is counted,
//! told why in its protocol when it is plaintext, and closed. With TLS, the handshake runs beside the loop (a slow or silent client
//! never holds up the next accept) under a timeout, with the newest certificate (rotation),
//! and a failure is recorded in words ([`crate::net::refusal`]). The loop ends when the
//! server stops taking connections (the stream is dropped).

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio::{
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, mpsc, watch},
    task::JoinSet,
};
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::ReceiverStream;
use tracing::warn;

use crate::faults::scenario::outage::Outages;
use crate::net::{
    close::{CloseSignal, Closer},
    conn::{Conn, PeerInfo, RequestBudget},
    identity::PeerIdentity,
    refusal::{self, NetStats},
    rotation::TlsView,
};

/// How long a client may take to finish its TLS handshake.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepted connections waiting for the HTTP server: it takes them as fast as they come, so
/// a few are enough; the bound keeps a stalled server from accepting without limit.
const READY_CAPACITY: usize = 64;

/// What the accept loop needs besides the listener.
#[derive(Debug, Clone)]
pub(crate) struct Accept {
    pub stats: NetStats,
    /// `None`: plaintext.
    pub tls: Option<watch::Receiver<TlsView>>,
    pub closer: Closer,
    /// Bytes of unfinished requests one connection may hold (see [`RequestBudget`]).
    pub budget_bytes: usize,
    /// The scenario's outages this listener goes away for (the xDS port; `None`: never).
    pub outages: Option<Outages>,
}

/// Starts accepting on `listener`; the connections come out of the returned stream.
pub(crate) fn incoming(
    listener: TcpListener,
    accept: Accept,
) -> ReceiverStream<std::io::Result<Conn>> {
    let (tx, rx) = mpsc::channel(READY_CAPACITY);
    tokio::spawn(accept_loop(listener, accept, tx));
    ReceiverStream::new(rx)
}

type Handshake = Result<Conn, (SocketAddr, String)>;

async fn accept_loop(
    listener: TcpListener,
    accept: Accept,
    tx: mpsc::Sender<std::io::Result<Conn>>,
) {
    let mut handshakes: JoinSet<Handshake> = JoinSet::new();
    let mut outage = accept.outages.as_ref().map(Outages::subscribe);
    let mut listener = listener;
    loop {
        let until = outage.as_mut().and_then(|o| *o.borrow_and_update());
        if let (Some(until), Some(outages)) = (until, &accept.outages) {
            match super::outage::sit_out(listener, &accept.closer, outages, until, tx.closed())
                .await
            {
                Some(again) => listener = again,
                None => return,
            }
            continue;
        }
        let ready = tokio::select! {
            _ = tx.closed() => return,
            Some(()) = outage_began(&mut outage) => continue,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => match admit(&accept, tcp, peer) {
                    Some((tcp, permit)) => match &accept.tls {
                        None => Ok(plain(&accept, tcp, peer, permit)),
                        Some(tls) => {
                            let config = tls.borrow().loaded.config.clone();
                            handshakes.spawn(handshake(accept.clone(), tcp, peer, permit, config));
                            continue;
                        }
                    },
                    None => continue,
                },
                Err(e) => {
                    // Out of file descriptors, mostly: give the process a moment.
                    warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            Some(done) = handshakes.join_next() => match done {
                Ok(handshake) => handshake,
                Err(e) => {
                    warn!(error = %e, "a TLS handshake task failed");
                    continue;
                }
            },
        };
        match ready {
            Ok(conn) => {
                if tx.send(Ok(conn)).await.is_err() {
                    return;
                }
            }
            Err((peer, reason)) => accept.stats.failed(peer, reason),
        }
    }
}

/// Resolves when the outage signal changes (never without one).
async fn outage_began(
    outage: &mut Option<watch::Receiver<Option<std::time::Instant>>>,
) -> Option<()> {
    match outage {
        Some(rx) => rx.changed().await.ok(),
        None => std::future::pending().await,
    }
}

/// The connection's permit; `None` (the socket closed, the refusal counted) at the limit.
fn admit(
    accept: &Accept,
    tcp: TcpStream,
    peer: SocketAddr,
) -> Option<(TcpStream, OwnedSemaphorePermit)> {
    let Ok(permit) = accept.stats.permits().try_acquire_owned() else {
        if accept.stats.refused() {
            warn!(%peer, refused = accept.stats.refused_connections(),
                "connection refused: --max-connections are open (logged once per 1000)");
        }
        if accept.tls.is_none() {
            refusal::refuse_crowded(tcp, &accept.stats);
        }
        return None;
    };
    // xDS pushes are small writes that should leave at once, not wait for Nagle.
    let _ = tcp.set_nodelay(true);
    Some((tcp, permit))
}

fn info(
    accept: &Accept,
    peer: SocketAddr,
    identity: Option<PeerIdentity>,
    close: &CloseSignal,
) -> PeerInfo {
    PeerInfo {
        addr: peer,
        identity: identity.map(Arc::new),
        budget: RequestBudget::new(accept.budget_bytes),
        kill: close.kill_switch(),
    }
}

fn plain(accept: &Accept, tcp: TcpStream, peer: SocketAddr, permit: OwnedSemaphorePermit) -> Conn {
    let close = accept.closer.signal();
    let info = info(accept, peer, None, &close);
    Conn::plain(tcp, info, close, permit)
}

async fn handshake(
    accept: Accept,
    tcp: TcpStream,
    peer: SocketAddr,
    permit: OwnedSemaphorePermit,
    config: Arc<tokio_rustls::rustls::ServerConfig>,
) -> Handshake {
    let establish = async {
        let mut head = [0u8; 16];
        let n = tcp.peek(&mut head).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the client closed the connection before sending anything".to_string());
        }
        // Every TLS connection starts with a handshake record (content type 22).
        if head[0] != 0x16 {
            return Err(refusal::refuse_plaintext(tcp, &head[..n]).await);
        }
        let stream = TlsAcceptor::from(config)
            .accept(tcp)
            .await
            .map_err(|e| refusal::handshake_reason(&e))?;
        let certs = stream.get_ref().1.peer_certificates();
        let identity = certs.and_then(|c| c.first()).and_then(PeerIdentity::of);
        let close = accept.closer.signal();
        let info = info(&accept, peer, identity, &close);
        Ok(Conn::tls(stream, info, close, permit))
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, establish).await {
        Ok(result) => result.map_err(|reason| (peer, reason)),
        Err(_) => Err((
            peer,
            format!("no TLS handshake within {HANDSHAKE_TIMEOUT:?}"),
        )),
    }
}
