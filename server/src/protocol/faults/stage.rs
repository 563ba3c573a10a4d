//! The fault stage between a stream machine and the wire. Pure: it is given a batch of
//! responses and the stream's context and returns a plan; the stream loop carries it out and
//! tells the machine what happened ([`crate::protocol::machine::StreamMachine::note_wire`]).
//!
//! When no rule applies to a stream the plan is the batch itself, untouched and unmoved, so a
//! server without a scenario pays nothing here. This build has no rules: every plan is that.

use crate::protocol::{
    kind::StreamKind, machine::StreamMachine, subscription::Exchange, wire::FaultMark,
};

/// What the stage knows of a stream (no clock: time comes in as the stream's age).
#[derive(Debug, Clone, Copy)]
pub struct StreamCtx<'a> {
    pub node: Option<&'a str>,
    pub kind: StreamKind,
}

/// One thing to do on the wire.
#[derive(Debug)]
pub enum WireStep<R> {
    /// Send `response`; `mark` names the rule that changed it, if one did.
    Send {
        response: R,
        mark: Option<FaultMark>,
    },
}

/// What to do with one batch.
#[derive(Debug)]
pub enum Plan<R> {
    /// Send every response as it is, in order.
    AsIs(Vec<R>),
    /// Carry out these steps in order.
    Steps(Vec<WireStep<R>>),
}

/// One stream's fault stage: the scenario rules that match the stream (none in this build).
#[derive(Debug, Default)]
pub struct FaultStage {}

impl FaultStage {
    pub fn new() -> Self {
        Self::default()
    }

    /// No rule applies to the stream: every plan is [`Plan::AsIs`].
    pub fn is_idle(&self) -> bool {
        true
    }

    /// The plan for one batch, in the order the machine returned it.
    pub fn plan<R>(&mut self, _ctx: &StreamCtx<'_>, out: Vec<R>) -> Plan<R> {
        Plan::AsIs(out)
    }

    /// After the machine handled a request of `type_url` as `exchange` says: the responses a
    /// rule adds (a resend after every ACK asks `machine` to repeat itself). None here.
    pub fn after_exchange<M: StreamMachine>(
        &mut self,
        _type_url: &str,
        _exchange: Exchange,
        _machine: &mut M,
    ) -> Vec<M::Response> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_rules_a_batch_goes_out_as_it_is() {
        let mut stage = FaultStage::new();
        assert!(stage.is_idle());
        let ctx = StreamCtx {
            node: Some("n"),
            kind: StreamKind::ADS_SOTW,
        };
        match stage.plan(&ctx, vec![1, 2, 3]) {
            Plan::AsIs(out) => assert_eq!(out, [1, 2, 3]),
            Plan::Steps(steps) => panic!("no rule, yet {} steps", steps.len()),
        }
    }
}
