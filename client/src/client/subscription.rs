//! Subscription handles: what a user wants of one type (names now, changed later) and the
//! events telling them what arrived.

use std::marker::PhantomData;

use tokio::sync::mpsc;

use crate::core::event::Event;
use crate::core::resource::{TypedEvent, XdsResource};
use crate::core::validate::Rejection;
use crate::core::watch_map::{Interest, WatchId};
use crate::error::ClientError;
use crate::transport::hub::{Call, Command};

/// One watch of one type. Dropping it unsubscribes.
///
/// Events must be consumed: like Envoy's callbacks, an update is delivered before it is ACKed,
/// so a subscription that is never read eventually holds the client up.
#[must_use = "dropping a Subscription unsubscribes at once"]
#[derive(Debug)]
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

    /// This watch's id on the mux (Envoy's watch handle).
    pub fn id(&self) -> WatchId {
        self.id
    }

    /// The type URL it watches.
    pub fn type_url(&self) -> &str {
        &self.type_url
    }

    /// The next event; `None` once the client has stopped, and at once for a subscription
    /// made with callbacks ([`crate::Client::subscribe_with`]): its events go to them.
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

/// A [`Subscription`] whose resources are decoded as `T`. Dropping it unsubscribes.
#[must_use = "dropping a TypedSubscription unsubscribes at once"]
pub struct TypedSubscription<T> {
    inner: Subscription,
    _type: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for TypedSubscription<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedSubscription")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<T: XdsResource> TypedSubscription<T> {
    pub(crate) fn new(inner: Subscription) -> Self {
        Self {
            inner,
            _type: PhantomData,
        }
    }

    /// The next event, decoded; `None` once the client has stopped, and at once for a
    /// subscription made with callbacks ([`crate::Client::subscribe_typed_with`]).
    pub async fn recv(&mut self) -> Option<Result<TypedEvent<T>, ClientError>> {
        let event = self.inner.recv().await?;
        Some(TypedEvent::decode(event))
    }

    /// Changes what this subscription wants (Envoy's `updateResourceInterest`).
    pub async fn set_interest(&self, interest: Interest) -> Result<(), ClientError> {
        self.inner.set_interest(interest).await
    }

    /// The untyped [`Subscription`] underneath.
    pub fn untyped(&self) -> &Subscription {
        &self.inner
    }
}

/// Envoy's `SubscriptionCallbacks`: what a subscription made with [`crate::Client::subscribe_with`]
/// is told, and its say on each update.
///
/// `on_config_update` is Envoy's `onConfigUpdate`, and like it, it decides: the client applies
/// the update and ACKs it only if it returns `Ok`. An `Err` is the NACK: the update is not
/// applied, the type keeps its last good config and version, and the rejection's message is the
/// request's `error_detail`. The next good update is applied and ACKed as usual.
///
/// A closure `FnMut(&Event) -> Result<(), Rejection>` is callbacks that only decide updates.
///
/// # Where they run, and what they must not do
///
/// The callbacks run on a blocking thread of their own (`tokio::task::spawn_blocking`), so
/// they may block or take long without stalling the runtime. But the session that received
/// the update waits for their verdict before it answers the server or handles anything else:
/// they must not wait on the client itself (a [`crate::StatusHandle`] query, a
/// `subscribe`, `stop`, another subscription's events), which would wait on that session in
/// turn. Such a wait ends only when [`crate::ClientConfig::callback_timeout`] passes, and the
/// update is then rejected (NACK) as unanswered. Callbacks that never return keep their
/// thread forever, and the runtime's shutdown waits for that thread (its blocking pool does).
pub trait SubscriptionCallbacks: Send + 'static {
    /// Envoy's `onConfigUpdate`: an [`Event::Sotw`] or [`Event::Delta`] with what the
    /// subscription would hold (SotW) or what changed (Delta). `Err` rejects the whole update.
    ///
    /// A new subscription whose resources the client already holds is given them at once;
    /// that update was accepted before, so a rejection of it is only logged.
    fn on_config_update(&mut self, update: &Event) -> Result<(), Rejection>;

    /// Envoy's `onConfigUpdateFailed`: an [`Event::Failed`] (the update was rejected, by these
    /// callbacks or another check, or the stream failed) or an [`Event::Missing`] (the
    /// resources asked for do not exist).
    fn on_config_update_failed(&mut self, _event: &Event) {}
}

impl<F> SubscriptionCallbacks for F
where
    F: FnMut(&Event) -> Result<(), Rejection> + Send + 'static,
{
    fn on_config_update(&mut self, update: &Event) -> Result<(), Rejection> {
        self(update)
    }
}

/// [`SubscriptionCallbacks`] of a typed subscription ([`crate::Client::subscribe_typed_with`],
/// Envoy's `SubscriptionBase<T>`): the resources arrive decoded as `T`.
///
/// A closure `FnMut(&TypedEvent<T>) -> Result<(), Rejection>` is callbacks that only decide
/// updates.
///
/// They run as [`SubscriptionCallbacks`] do: on a blocking thread, with the session waiting
/// for their verdict (until [`crate::ClientConfig::callback_timeout`], then NACK). They must
/// not wait on the client itself (e.g. a [`crate::StatusHandle`] query), and callbacks that
/// never return keep their thread, and the runtime's shutdown, waiting.
pub trait TypedSubscriptionCallbacks<T>: Send + 'static {
    /// Envoy's `onConfigUpdate`, decoded: [`TypedEvent::Sotw`] or [`TypedEvent::Delta`].
    /// `Err` rejects the whole update (NACK).
    fn on_config_update(&mut self, update: &TypedEvent<T>) -> Result<(), Rejection>;

    /// Envoy's `onConfigUpdateFailed`: [`TypedEvent::Failed`] or [`TypedEvent::Missing`].
    fn on_config_update_failed(&mut self, _event: &TypedEvent<T>) {}
}

impl<T, F> TypedSubscriptionCallbacks<T> for F
where
    F: FnMut(&TypedEvent<T>) -> Result<(), Rejection> + Send + 'static,
{
    fn on_config_update(&mut self, update: &TypedEvent<T>) -> Result<(), Rejection> {
        self(update)
    }
}

/// Typed callbacks as untyped ones: decodes each event as `T` first; an update that does not
/// decode is rejected without calling them.
pub(crate) struct DecodeFirst<T, C> {
    callbacks: C,
    _type: PhantomData<fn() -> T>,
}

impl<T, C> DecodeFirst<T, C> {
    pub(crate) fn new(callbacks: C) -> Self {
        Self {
            callbacks,
            _type: PhantomData,
        }
    }
}

impl<T: XdsResource, C: TypedSubscriptionCallbacks<T>> SubscriptionCallbacks for DecodeFirst<T, C> {
    fn on_config_update(&mut self, update: &Event) -> Result<(), Rejection> {
        let typed =
            TypedEvent::<T>::decode(update.clone()).map_err(|e| Rejection::new(e.to_string()))?;
        self.callbacks.on_config_update(&typed)
    }

    fn on_config_update_failed(&mut self, event: &Event) {
        match TypedEvent::<T>::decode(event.clone()) {
            Ok(typed) => self.callbacks.on_config_update_failed(&typed),
            Err(e) => tracing::warn!(error = %e, "event not delivered: it does not decode"),
        }
    }
}

/// Runs `callbacks` on a blocking task of their own until the session drops their queue: user
/// code may block or take long without holding up the runtime, and the session bounds how
/// long it waits for a verdict.
pub(crate) fn run_callbacks(
    mut callbacks: impl SubscriptionCallbacks,
    mut calls: mpsc::Receiver<Call>,
) {
    tokio::task::spawn_blocking(move || {
        while let Some(Call { event, verdict }) = calls.blocking_recv() {
            if !matches!(event, Event::Sotw { .. } | Event::Delta { .. }) {
                callbacks.on_config_update_failed(&event);
                continue;
            }
            let answer = callbacks.on_config_update(&event);
            match verdict {
                // The session may have given up waiting; the update is rejected then anyway.
                Some(verdict) => {
                    let _ = verdict.send(answer);
                }
                None => {
                    if let Err(rejection) = answer {
                        tracing::warn!(
                            error = %rejection.message(),
                            "callbacks rejected resources already accepted: ignored"
                        );
                    }
                }
            }
        }
    });
}
