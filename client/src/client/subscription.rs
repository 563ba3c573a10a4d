//! Subscription handles: what a user wants of one type (names now, changed later) and the
//! events telling them what arrived.

use std::marker::PhantomData;

use tokio::sync::mpsc;

use crate::core::event::Event;
use crate::core::resource::{TypedEvent, XdsResource};
use crate::core::watch_map::{Interest, WatchId};
use crate::error::ClientError;
use crate::transport::hub::Command;

/// One watch of one type. Dropping it unsubscribes.
///
/// Events must be consumed: like Envoy's callbacks, an update is delivered before it is ACKed,
/// so a subscription that is never read eventually holds the client up.
pub struct Subscription {
    id: WatchId,
    type_url: String,
    commands: mpsc::Sender<Command>,
    events: mpsc::Receiver<Event>,
}

impl Subscription {
    pub(crate) fn new(
        id: WatchId,
        type_url: String,
        commands: mpsc::Sender<Command>,
        events: mpsc::Receiver<Event>,
    ) -> Self {
        Self {
            id,
            type_url,
            commands,
            events,
        }
    }

    pub fn id(&self) -> WatchId {
        self.id
    }

    pub fn type_url(&self) -> &str {
        &self.type_url
    }

    /// The next event; `None` once the client has stopped.
    pub async fn recv(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// Changes what this subscription wants. Only names new to the whole type (or no longer
    /// wanted by any subscription) go on the wire.
    pub async fn set_interest(&self, interest: Interest) -> Result<(), ClientError> {
        let command = Command::SetInterest {
            id: self.id,
            interest,
        };
        self.commands
            .send(command)
            .await
            .map_err(|_| ClientError::Stopped)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // If the queue is full the session still notices: delivering to a dropped
        // subscription fails and removes the watch.
        let _ = self.commands.try_send(Command::Unwatch { id: self.id });
    }
}

/// A [`Subscription`] whose resources are decoded as `T`.
pub struct TypedSubscription<T> {
    inner: Subscription,
    _type: PhantomData<fn() -> T>,
}

impl<T: XdsResource> TypedSubscription<T> {
    pub(crate) fn new(inner: Subscription) -> Self {
        Self {
            inner,
            _type: PhantomData,
        }
    }

    /// The next event, decoded; `None` once the client has stopped.
    pub async fn recv(&mut self) -> Option<Result<TypedEvent<T>, ClientError>> {
        let event = self.inner.recv().await?;
        Some(TypedEvent::decode(event))
    }

    pub async fn set_interest(&self, interest: Interest) -> Result<(), ClientError> {
        self.inner.set_interest(interest).await
    }

    pub fn untyped(&self) -> &Subscription {
        &self.inner
    }
}
