//! A running client: the `Hub` driven by the transport its source chose, until shutdown or
//! until every handle is gone.

use std::future::Future;

use crate::transport::Transport;
use crate::transport::hub::{Hub, Offline};

/// A running client: the shared hub driven by the transport its source chose.
pub(crate) struct Session {
    pub hub: Hub,
    pub transport: Transport,
}

impl Session {
    /// Runs until `shutdown` resolves or every handle is gone.
    pub(crate) async fn run(mut self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        // Like Envoy, nothing goes on the wire until there is something to ask for.
        loop {
            let Some(command) = self.hub.command_or_shutdown(&mut shutdown).await else {
                return;
            };
            let interest = command.is_interest();
            self.hub.handle(command);
            if interest {
                break;
            }
        }
        self.hub.flush(&mut Offline).await;
        self.transport.run(&mut self.hub, &mut shutdown).await;
    }
}

#[cfg(test)]
mod tests;
