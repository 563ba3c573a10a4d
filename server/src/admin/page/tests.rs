//! The page's model task: it runs only while a page is open.

use std::{sync::Arc, time::Duration};

use tokio::sync::watch;

use super::*;
use crate::{admin::registry::StreamKind, test_support::snapshot};

fn page() -> (Page, Registry) {
    let registry = Registry::new();
    let (_, snapshots) = watch::channel(snapshot(1, &[]));
    let sources = Sources {
        registry: registry.clone(),
        snapshots,
        reloads: None,
        scenarios: crate::faults::scenario::Scenarios::new(),
    };
    (Page::new(sources), registry)
}

#[tokio::test(start_paused = true)]
async fn the_model_task_runs_while_a_page_is_open_and_rebuilds_on_changes() {
    let (page, registry) = page();
    assert!(!page.is_live(), "nobody looks: no task");
    let mut models = page.hub.subscribe(&page.sources);
    let second = page.hub.subscribe(&page.sources);
    assert_eq!(models.borrow_and_update().totals.streams, 0);
    let _stream = registry.open(StreamKind::ADS_SOTW, None, None);
    tokio::time::timeout(Duration::from_secs(1), models.changed())
        .await
        .expect("a rebuild within a tick or so")
        .unwrap();
    let model = models.borrow_and_update().clone();
    assert_eq!((model.totals.streams, model.rows.len()), (1, 1));
    // Nothing changed: no new model, however long the page stays.
    let quiet = tokio::time::timeout(Duration::from_secs(5), models.changed()).await;
    assert!(quiet.is_err(), "a model without a change");

    drop((models, second));
    tokio::time::sleep(hub::TICK * 2).await;
    assert!(!page.is_live(), "the last page closed: the task ended");
    let mut again = page.hub.subscribe(&page.sources);
    assert!(page.is_live());
    assert_eq!(Arc::clone(&again.borrow_and_update()).totals.streams, 1);
}

#[test]
fn the_served_page_carries_the_term_table_and_none_of_its_words_itself() {
    let html = page_html();
    assert!(!html.contains("/*TERMS*/"), "the placeholder is filled");
    let start = html
        .find(r#"<script id="terms" type="application/json">"#)
        .unwrap();
    let json = &html[start..];
    let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
    let table: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(table, xdsloop_transcript::terms::page_table());
    // One table: the page's own text does not spell the loop's words a second time.
    // (Two-character words such as 下发 are ordinary Chinese too: the longer ones tell.)
    for (step, words) in table["zh"]["steps"].as_object().unwrap() {
        let title = words["title"].as_str().unwrap();
        let spelt = title.chars().count() > 2 && PAGE.contains(title);
        assert!(!spelt, "page.html spells {step}'s title {title:?} itself");
    }
    for state in table["zh"]["states"].as_object().unwrap().values() {
        for words in [&state["name"], &state["means"]] {
            let words = words.as_str().unwrap();
            assert!(!PAGE.contains(words), "page.html spells {words:?} itself");
        }
    }
}
