//! The steps of the xDS loop, each with the Envoy call that takes it on a client.
//!
//! One table for everything that names a moment of the loop (the `step` of transcript lines,
//! and any other view of a stream), so they all say it the same way and point a reader at the
//! same place in Envoy's source (`GrpcMuxImpl`, `GrpcStream` and the subscription callbacks).
//! Each step is named in English and in the Chinese of the course lesson xdsloop grew from
//! (its five steps 「建、订、发、用、认」); [`crate::terms`] holds the rest of that vocabulary.

use serde::{Deserialize, Serialize};
use xdsloop_proto::Variant;

/// One step of the loop *stream → subscribe → push → apply → ACK/NACK*.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A stream opened.
    Established,
    /// The first request for a type that the node's previous stream did not have.
    Subscribe,
    /// The first request for a type the node's previous stream had: the client reconnected.
    Resubscribe,
    /// A later request that widens or narrows the interest without answering a response.
    Update,
    /// A response.
    Push,
    /// A response that only refreshes TTL'd resources (S15): wrappers without `resource`.
    Heartbeat,
    /// The response was applied and acknowledged.
    Ack,
    /// The response was rejected (`error_detail` set).
    Nack,
    /// The server did not act on the request: a stale nonce (S4) or no type URL.
    Ignored,
    /// The stream ended.
    Closed,
}

/// What a [`Step`] means on each side of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepInfo {
    /// The step this row describes.
    pub step: Step,
    /// How people say it ("apply + ACK").
    pub title: &'static str,
    /// What makes the server see this step.
    pub trigger: &'static str,
    /// The Envoy client code that takes this step (`—` when no client call does), told as a
    /// State-of-the-World stream takes it.
    pub envoy: &'static str,
    /// The same on a Delta stream, where that differs: a Delta request carries no
    /// `version_info`, so an ACK or NACK names only the nonce it answers.
    pub envoy_delta: Option<&'static str>,
    /// The same step in the lesson's words: `title` and `envoy` in Chinese.
    pub zh: Words,
}

/// A step's title and Envoy call in one language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Words {
    /// How people say the step ([`StepInfo::title`]).
    pub title: &'static str,
    /// The Envoy call that takes it on a State-of-the-World stream ([`StepInfo::envoy`]).
    pub envoy: &'static str,
    /// The Envoy call on a Delta stream, where it differs (see [`StepInfo::envoy_delta`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envoy_delta: Option<&'static str>,
}

/// Every step in loop order.
pub const STEPS: [StepInfo; 10] = [
    StepInfo {
        step: Step::Established,
        title: "stream established",
        trigger: "a stream opens",
        envoy: "establishNewStream → onStreamEstablished (clears nonces, queues every type)",
        envoy_delta: None,
        zh: Words {
            title: "建流",
            envoy: "establishNewStream → onStreamEstablished（清空 nonce，为每个类型排队请求）",
            envoy_delta: None,
        },
    },
    StepInfo {
        step: Step::Subscribe,
        title: "subscribe",
        trigger: "first request for a type the node's previous stream did not have",
        envoy: "queueDiscoveryRequest → sendDiscoveryRequest",
        envoy_delta: None,
        zh: Words {
            title: "订阅",
            envoy: "queueDiscoveryRequest → sendDiscoveryRequest",
            envoy_delta: None,
        },
    },
    StepInfo {
        step: Step::Resubscribe,
        title: "resubscribe after reconnect",
        trigger: "first request for a type the node's previous stream had",
        envoy: "onStreamEstablished → sendDiscoveryRequest",
        envoy_delta: None,
        zh: Words {
            title: "重连 · 重新订阅",
            envoy: "onStreamEstablished 重新订阅所有类型 → sendDiscoveryRequest",
            envoy_delta: None,
        },
    },
    StepInfo {
        step: Step::Update,
        title: "update subscription",
        trigger: "a later request that widens or narrows the interest",
        envoy: "updateWatchInterest → sendDiscoveryRequest",
        envoy_delta: None,
        zh: Words {
            title: "订阅 · 改变关注",
            envoy: "updateWatchInterest → sendDiscoveryRequest",
            envoy_delta: None,
        },
    },
    StepInfo {
        step: Step::Push,
        title: "push",
        trigger: "a response is sent",
        envoy: "onDiscoveryResponse",
        envoy_delta: None,
        zh: Words {
            title: "下发",
            envoy: "onDiscoveryResponse",
            envoy_delta: None,
        },
    },
    StepInfo {
        step: Step::Heartbeat,
        title: "heartbeat",
        trigger: "a response of TTL'd resources without their bodies (S15)",
        envoy: "onDiscoveryResponse (a heartbeat only refreshes the TTL: no onConfigUpdate)",
        envoy_delta: None,
        zh: Words {
            title: "下发 · 心跳",
            envoy: "onDiscoveryResponse（心跳只续 TTL，不调 onConfigUpdate）",
            envoy_delta: None,
        },
    },
    StepInfo {
        step: Step::Ack,
        title: "apply + ACK",
        trigger: "a request answering the latest response, no error_detail",
        envoy: "onConfigUpdate → sendDiscoveryRequest (version = the new one)",
        envoy_delta: Some(
            "onConfigUpdate → sendDiscoveryRequest (response_nonce = the response's nonce)",
        ),
        zh: Words {
            title: "确认 (ACK)",
            envoy: "onConfigUpdate 成功 → sendDiscoveryRequest（version = 新版本，nonce = 下发的 nonce）",
            envoy_delta: Some(
                "onConfigUpdate 成功 → sendDiscoveryRequest（response_nonce = 下发的 nonce）",
            ),
        },
    },
    StepInfo {
        step: Step::Nack,
        title: "reject + NACK",
        trigger: "a request answering the latest response with error_detail",
        envoy: "onConfigUpdateFailed(UpdateRejected) → sendDiscoveryRequest with error_detail",
        envoy_delta: None,
        zh: Words {
            title: "拒绝 (NACK, 保留旧配置)",
            envoy: "onConfigUpdateFailed(UpdateRejected) → sendDiscoveryRequest（带 error_detail，version 仍是旧版本）",
            envoy_delta: Some(
                "onConfigUpdateFailed(UpdateRejected) → sendDiscoveryRequest（带 error_detail，response_nonce = 下发的 nonce）",
            ),
        },
    },
    StepInfo {
        step: Step::Ignored,
        title: "ignored (stale nonce)",
        trigger: "a request whose nonce is not the latest for its type (S4), or without a type",
        envoy: "—",
        envoy_delta: None,
        zh: Words {
            title: "忽略（过期 nonce）",
            envoy: "—",
            envoy_delta: None,
        },
    },
    StepInfo {
        step: Step::Closed,
        title: "stream closed",
        trigger: "the stream ends (client gone, status, reset, shutdown)",
        envoy: "onRemoteClose → onEstablishmentFailure → \
                onConfigUpdateFailed(ConnectionFailure), retry with backoff",
        envoy_delta: None,
        zh: Words {
            title: "断线",
            envoy: "onRemoteClose → onEstablishmentFailure → onConfigUpdateFailed(ConnectionFailure)，退避后重连",
            envoy_delta: None,
        },
    },
];

/// How a request relates to the latest response of its type on the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No response of this type was sent on the stream yet, or the request carries no nonce.
    Initial,
    /// Answers the latest response without `error_detail`.
    Ack,
    /// Answers the latest response with `error_detail`.
    Nack,
    /// Carries a nonce that is not the latest sent for its type (S4).
    Stale,
    /// Not classified: the request has no type URL.
    Ignored,
}

/// Whether a request changed the interest in its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The request asks for names (or a wildcard) it did not ask for before.
    Widened,
    /// The request drops names it asked for before, and adds none.
    Narrowed,
}

impl Step {
    /// The step a request takes, from what the server knows about it: its verdict, whether it
    /// is the first request for its type on the stream, whether the node's previous stream had
    /// the type, and whether it changed the interest.
    pub fn of_request(
        verdict: Verdict,
        first_for_type: bool,
        previous_stream_had_type: bool,
        change: Option<Change>,
    ) -> Step {
        match verdict {
            Verdict::Ack => Step::Ack,
            Verdict::Nack => Step::Nack,
            // Delta honours interest changes even under a stale nonce (S4).
            Verdict::Stale if change.is_some() => Step::Update,
            Verdict::Stale | Verdict::Ignored => Step::Ignored,
            Verdict::Initial if !first_for_type => Step::Update,
            Verdict::Initial if previous_stream_had_type => Step::Resubscribe,
            Verdict::Initial => Step::Subscribe,
        }
    }

    /// The table row of this step.
    pub fn info(self) -> &'static StepInfo {
        &STEPS[self as usize]
    }

    /// The token in the file (`ack`), as serde writes it.
    pub fn label(self) -> &'static str {
        match self {
            Step::Established => "established",
            Step::Subscribe => "subscribe",
            Step::Resubscribe => "resubscribe",
            Step::Update => "update",
            Step::Push => "push",
            Step::Heartbeat => "heartbeat",
            Step::Ack => "ack",
            Step::Nack => "nack",
            Step::Ignored => "ignored",
            Step::Closed => "closed",
        }
    }

    /// How people say it in English ("apply + ACK").
    pub fn title(self) -> &'static str {
        self.info().title
    }

    /// The Envoy call that takes this step on a State-of-the-World stream.
    pub fn envoy_call(self) -> &'static str {
        self.info().envoy
    }

    /// The Envoy call that takes this step on a stream of `variant`.
    pub fn envoy_call_on(self, variant: Variant) -> &'static str {
        let info = self.info();
        match variant {
            Variant::Delta => info.envoy_delta.unwrap_or(info.envoy),
            Variant::Sotw => info.envoy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_step_order_and_labels_match_serde() {
        for (i, info) in STEPS.iter().enumerate() {
            assert_eq!(info.step as usize, i, "{:?} out of place", info.step);
            let json = serde_json::to_string(&info.step).unwrap();
            assert_eq!(json, format!("\"{}\"", info.step.label()));
        }
    }

    #[test]
    fn request_steps_follow_the_verdict_then_the_stream_history() {
        use Verdict::*;
        assert_eq!(Step::of_request(Ack, false, false, None), Step::Ack);
        assert_eq!(
            Step::of_request(Nack, false, true, Some(Change::Widened)),
            Step::Nack
        );
        assert_eq!(
            Step::of_request(Initial, true, false, None),
            Step::Subscribe
        );
        assert_eq!(
            Step::of_request(Initial, true, true, None),
            Step::Resubscribe
        );
        assert_eq!(
            Step::of_request(Initial, false, true, Some(Change::Narrowed)),
            Step::Update
        );
        assert_eq!(Step::of_request(Stale, false, false, None), Step::Ignored);
        assert_eq!(
            Step::of_request(Stale, false, false, Some(Change::Widened)),
            Step::Update,
            "Delta: a stale nonce does not cancel an interest change"
        );
        assert_eq!(Step::of_request(Ignored, true, false, None), Step::Ignored);
    }

    #[test]
    fn delta_acks_and_nacks_name_no_version() {
        // A DeltaDiscoveryRequest has no version_info: the words must not say it carries one.
        for info in STEPS {
            let delta = [
                info.step.envoy_call_on(Variant::Delta),
                info.zh.envoy_delta.unwrap_or(info.zh.envoy),
            ];
            for words in delta {
                assert!(
                    !words.contains("version") || words.contains("system_version"),
                    "{:?} on Delta says {words:?}",
                    info.step
                );
                assert!(
                    !words.contains("版本"),
                    "{:?} on Delta says {words:?}",
                    info.step
                );
            }
        }
        assert!(
            Step::Ack
                .envoy_call_on(Variant::Sotw)
                .contains("version = the new one")
        );
    }

    #[test]
    fn envoy_calls_name_the_client_code() {
        assert_eq!(Step::Push.envoy_call(), "onDiscoveryResponse");
        assert_eq!(Step::Ack.title(), "apply + ACK");
        assert!(Step::Closed.envoy_call().contains("ConnectionFailure"));
    }
}
