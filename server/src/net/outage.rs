//! An outage on purpose (`do: { outage: { for: 10s } }`): the xDS port goes away for a while
//! and comes back. The listener is closed, so a client's connect is refused (not a stream
//! error, not a hang), every open connection is closed with it, and when the time is up the
//! same address is bound again. The accept loop ([`crate::net::incoming`]) calls [`sit_out`]
//! when the scenario's [`Outages`] signal says one began.

use std::{net::SocketAddr, time::Duration};

use tokio::{net::TcpListener, time::Instant};
use tracing::{info, warn};

use crate::{faults::scenario::outage::Outages, net::close::Closer};

/// How long to wait before binding again when the address is still taken.
const REBIND_RETRY: Duration = Duration::from_millis(100);

/// Closes `listener` and the connections `closer` holds, waits until `until`, binds the same
/// address again and tells `outages` it is over. `None` if it could not be bound again
/// before `stopped` resolved (the server is stopping).
pub(crate) async fn sit_out(
    listener: TcpListener,
    closer: &Closer,
    outages: &Outages,
    until: std::time::Instant,
    stopped: impl std::future::Future<Output = ()>,
) -> Option<TcpListener> {
    let addr = match listener.local_addr() {
        Ok(addr) => addr,
        Err(e) => {
            warn!(error = %e, "outage: the listener has no address; it stays open");
            outages.end();
            return Some(listener);
        }
    };
    drop(listener);
    let closed = closer.close_open();
    outages.closed(closed);
    let left = until.saturating_duration_since(std::time::Instant::now());
    warn!(%addr, connections = closed, left = ?left,
        "outage: the xDS listener is closed (connections are refused) and every open connection with it");
    tokio::pin!(stopped);
    tokio::select! {
        () = tokio::time::sleep_until(Instant::from_std(until)) => {}
        () = &mut stopped => return None,
    }
    loop {
        match bind(addr).await {
            Ok(listener) => {
                outages.end();
                info!(%addr, "outage over: listening again on {addr}");
                return Some(listener);
            }
            Err(e) => {
                let attempts = outages.rebind_failed(e.to_string());
                if worth_logging(attempts) {
                    warn!(%addr, error = %e, attempts,
                        "outage over, but the address cannot be bound again; retrying every {REBIND_RETRY:?} (logged at attempts 1, 2, 4, 8, ...)");
                }
                tokio::select! {
                    () = tokio::time::sleep(REBIND_RETRY) => {}
                    () = &mut stopped => return None,
                }
            }
        }
    }
}

/// A failing rebind is logged at its 1st, 2nd, 4th, 8th, ... attempt: the first says what is
/// wrong, the later ones that it still is, without a line every retry.
fn worth_logging(attempts: u64) -> bool {
    attempts.is_power_of_two()
}

async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    // tokio sets SO_REUSEADDR on Unix: the connections just closed (TIME_WAIT) do not hold
    // the port.
    TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failing_rebind_is_logged_ever_more_rarely() {
        let logged: Vec<u64> = (1..=100).filter(|a| super::worth_logging(*a)).collect();
        assert_eq!(logged, [1, 2, 4, 8, 16, 32, 64]);
    }
}
