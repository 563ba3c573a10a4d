//! The words xdsloop teaches the loop with, in English and in the Chinese of the course lesson
//! it grew from (day 12, 配置订阅机制: 建流 → 订阅 → 下发 → 应用 → 确认, 「建、订、发、用、认」).
//!
//! One table, so every view says a thing the same way: `xdsloop-client --explain --lang`, the
//! live page (the server inlines [`page_table`] into it) and the labs in docs/ use these words.
//! The steps' own titles and Envoy calls are rows of [`crate::step::STEPS`]; this module adds
//! the words around them (applying, reconnecting, keeping the old config) and the states
//! `/status` and the page give a client's type.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::step::{STEPS, Step};
use xdsloop_proto::Variant;

/// The language of what people read. The server's log stays English whatever the page shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    /// English.
    #[default]
    En,
    /// 中文: the lesson's own words.
    Zh,
}

/// A word or phrase of the loop that is not a step title.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Term {
    /// Step 4 of the lesson: the client applies a pushed config.
    Apply,
    /// The Envoy call that applies it.
    ApplyEnvoy,
    /// The Envoy call when applying fails (the NACK follows).
    ApplyFailedEnvoy,
    /// Applying failed.
    Failed,
    /// The stream broke.
    Disconnected,
    /// A new stream after a broken one.
    Reconnect,
    /// What a NACK does: the client keeps running what it had.
    KeepsOldConfig,
    /// An empty first request: every resource of the type.
    Wildcard,
    /// Names an update brought that the client did not have.
    Added,
    /// Names an update changed.
    Updated,
    /// Names an update took away.
    Removed,
    /// An update that added, changed and removed nothing.
    NothingNew,
    /// The version a NACK turned down.
    RejectedVersion,
    /// The version a NACK keeps.
    KeptVersion,
    /// A heartbeat refreshed TTLs: nothing to apply.
    TtlRefreshed,
}

/// One [`Term`] in both languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermInfo {
    /// The term this row says.
    pub term: Term,
    /// In English.
    pub en: &'static str,
    /// In Chinese, as the lesson says it.
    pub zh: &'static str,
}

/// Every term.
pub const TERMS: [TermInfo; 15] = [
    TermInfo {
        term: Term::Apply,
        en: "apply",
        zh: "应用",
    },
    TermInfo {
        term: Term::ApplyEnvoy,
        en: "onConfigUpdate",
        zh: "onConfigUpdate（解码为 DecodedResource，应用到运行时对象）",
    },
    TermInfo {
        term: Term::ApplyFailedEnvoy,
        en: "onConfigUpdate returns an error",
        zh: "onConfigUpdate 返回错误（第 4 步失败 → 回 NACK）",
    },
    TermInfo {
        term: Term::Failed,
        en: "failed",
        zh: "失败",
    },
    TermInfo {
        term: Term::Disconnected,
        en: "stream closed",
        zh: "断线",
    },
    TermInfo {
        term: Term::Reconnect,
        en: "reconnect",
        zh: "重连",
    },
    TermInfo {
        term: Term::KeepsOldConfig,
        en: "keeps the old config",
        zh: "保留旧配置",
    },
    TermInfo {
        term: Term::Wildcard,
        en: "wildcard",
        zh: "通配",
    },
    TermInfo {
        term: Term::Added,
        en: "added",
        zh: "新增",
    },
    TermInfo {
        term: Term::Updated,
        en: "updated",
        zh: "更新",
    },
    TermInfo {
        term: Term::Removed,
        en: "removed",
        zh: "删除",
    },
    TermInfo {
        term: Term::NothingNew,
        en: "nothing new",
        zh: "没有新内容",
    },
    TermInfo {
        term: Term::RejectedVersion,
        en: "rejected",
        zh: "拒绝",
    },
    TermInfo {
        term: Term::KeptVersion,
        en: "kept",
        zh: "保留",
    },
    TermInfo {
        term: Term::TtlRefreshed,
        en: "TTL refreshed",
        zh: "TTL 已续期",
    },
];

/// A client's state on one type, as `/status`, `xdsloop-server status` and the page give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateInfo {
    /// The token `/status` uses, the same in every language.
    pub state: &'static str,
    /// Its name and meaning in English.
    pub en: Meaning,
    /// Its name and meaning in Chinese.
    pub zh: Meaning,
}

/// A state's name and what it means, in one language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Meaning {
    /// The state's name as people read it (`SYNCED`, `已同步`).
    pub name: &'static str,
    /// One sentence on what the state says about the client and the snapshot.
    pub means: &'static str,
}

/// The four states, best first.
pub const STATES: [StateInfo; 4] = [
    StateInfo {
        state: "SYNCED",
        en: Meaning {
            name: "SYNCED",
            means: "the latest response is the current snapshot and the client ACKed it",
        },
        zh: Meaning {
            name: "已同步",
            means: "最新下发的就是当前快照，客户端已确认 (ACK)",
        },
    },
    StateInfo {
        state: "PENDING",
        en: Meaning {
            name: "PENDING",
            means: "the latest response is the current snapshot and the client has not \
                    answered it yet",
        },
        zh: Meaning {
            name: "待确认",
            means: "最新下发的就是当前快照，客户端还没回应（已下发，未确认）",
        },
    },
    StateInfo {
        state: "NACKED",
        en: Meaning {
            name: "NACKED",
            means: "the client rejected the current version and keeps running the one it \
                    had; it is not sent again until the fixtures change",
        },
        zh: Meaning {
            name: "已拒绝",
            means: "客户端拒绝 (NACK) 了当前版本，保留旧配置继续跑；配置不变就不会重发",
        },
    },
    StateInfo {
        state: "STALE",
        en: Meaning {
            name: "STALE",
            means: "the latest response is older than the snapshot: the push is about to go \
                    out, or the stream cannot take it, or the fixtures moved on after a NACK",
        },
        zh: Meaning {
            name: "落后",
            means: "最新下发的比当前快照旧：新的下发马上就发，或这条流收不下（客户端不读了），\
                    或 NACK 之后配置又改了",
        },
    },
];

impl Lang {
    /// `en` or `zh`, as `--lang` and `?lang=` take it.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// A step's title (`apply + ACK`, `确认 (ACK)`).
    pub fn title(self, step: Step) -> &'static str {
        let info = step.info();
        match self {
            Lang::En => info.title,
            Lang::Zh => info.zh.title,
        }
    }

    /// The Envoy client call that takes a step on a stream of `variant`, told in this language.
    pub fn envoy_call(self, step: Step, variant: Variant) -> &'static str {
        let info = step.info();
        match (self, variant) {
            (Lang::En, _) => step.envoy_call_on(variant),
            (Lang::Zh, Variant::Delta) => info.zh.envoy_delta.unwrap_or(info.zh.envoy),
            (Lang::Zh, Variant::Sotw) => info.zh.envoy,
        }
    }

    /// A term in this language.
    pub fn term(self, term: Term) -> &'static str {
        let info = TERMS
            .iter()
            .find(|t| t.term == term)
            .expect("every term has a row");
        match self {
            Lang::En => info.en,
            Lang::Zh => info.zh,
        }
    }

    /// A state's name and meaning (`None` for a token that is not a state).
    pub fn state(self, state: &str) -> Option<Meaning> {
        let info = STATES.iter().find(|s| s.state == state)?;
        Some(match self {
            Lang::En => info.en,
            Lang::Zh => info.zh,
        })
    }
}

/// What the live page needs of the table, per language: every step by its transcript label
/// (`{"ack": {"title", "envoy", "envoy_delta"}}`, `envoy_delta` only where a Delta stream's
/// call reads differently) and every state by its token (`{"SYNCED": {"name", "means"}}`).
pub fn page_table() -> Value {
    let mut table = Map::new();
    for lang in [Lang::En, Lang::Zh] {
        let steps: Map<String, Value> = STEPS
            .iter()
            .map(|info| {
                let step = info.step;
                let (sotw, delta) = (
                    lang.envoy_call(step, Variant::Sotw),
                    lang.envoy_call(step, Variant::Delta),
                );
                let mut words = json!({ "title": lang.title(step), "envoy": sotw });
                if delta != sotw {
                    words["envoy_delta"] = json!(delta);
                }
                (step.label().to_string(), words)
            })
            .collect();
        let states: Map<String, Value> = STATES
            .iter()
            .map(|s| (s.state.to_string(), json!(lang.state(s.state))))
            .collect();
        table.insert(
            lang.code().into(),
            json!({ "steps": steps, "states": states }),
        );
    }
    Value::Object(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_term_has_one_row_in_order() {
        for (i, info) in TERMS.iter().enumerate() {
            assert_eq!(
                TERMS.iter().position(|t| t.term == info.term),
                Some(i),
                "{:?} has two rows",
                info.term
            );
            assert!(!info.en.is_empty() && !info.zh.is_empty());
        }
    }

    #[test]
    fn the_lessons_five_steps_name_the_loop_in_chinese() {
        let zh = |step| Lang::Zh.title(step);
        assert_eq!(zh(Step::Established), "建流");
        assert_eq!(zh(Step::Subscribe), "订阅");
        assert_eq!(zh(Step::Push), "下发");
        assert_eq!(Lang::Zh.term(Term::Apply), "应用");
        assert_eq!(zh(Step::Ack), "确认 (ACK)");
        assert!(zh(Step::Nack).starts_with("拒绝 (NACK, "));
        assert!(zh(Step::Nack).contains(Lang::Zh.term(Term::KeepsOldConfig)));
        assert!(zh(Step::Resubscribe).starts_with(Lang::Zh.term(Term::Reconnect)));
        assert_eq!(zh(Step::Closed), Lang::Zh.term(Term::Disconnected));
        assert_eq!(Step::Closed.title(), Lang::En.term(Term::Disconnected));
    }

    #[test]
    fn both_languages_name_the_same_envoy_functions() {
        // The Chinese explains in Chinese but names Envoy's code as it is spelt.
        let calls = |s: &str| -> Vec<String> {
            s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '(' || c == ')'))
                .filter(|w| w.starts_with(|c: char| c.is_ascii_lowercase()) && w.len() > 8)
                .map(|w| w.trim_end_matches(')').to_string())
                .collect()
        };
        for info in STEPS {
            let en: Vec<_> = calls(info.envoy)
                .into_iter()
                .filter(|w| w.chars().any(|c| c.is_ascii_uppercase()))
                .collect();
            for call in en {
                assert!(
                    info.zh.envoy.contains(&call),
                    "{:?}: the Chinese does not name {call}",
                    info.step
                );
            }
        }
    }

    #[test]
    fn the_page_table_has_every_step_and_state_in_both_languages() {
        let table = page_table();
        for lang in ["en", "zh"] {
            for info in STEPS {
                let words = &table[lang]["steps"][info.step.label()];
                assert!(words["title"].is_string() && words["envoy"].is_string());
            }
            for state in STATES {
                assert!(table[lang]["states"][state.state]["means"].is_string());
            }
        }
        assert_eq!(table["zh"]["steps"]["push"]["title"], "下发");
        assert_eq!(table["zh"]["states"]["NACKED"]["name"], "已拒绝");
        assert_eq!(table["en"]["steps"]["ack"]["title"], "apply + ACK");
    }
}
