//! Every registered test, end to end: the registry's own list drives the
//! CLI, so a test added to the table is run here without a line more. Each
//! runs on a simulated card; its JSON names the command and carries its
//! result under its key, and its text is what `results show` prints of the
//! stored run (one renderer for both).

use flashlab::measure::TestName;

use crate::support::{json, text_with_db, with_db};

const CARD: &str = "sim:demo,capacity=256M";

#[test]
fn every_registered_test_runs_through_the_cli_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    assert!(TestName::ALL.len() >= 9, "{:?}", TestName::ALL);
    for (n, test) in TestName::ALL.iter().enumerate() {
        let word = test.as_str();
        let doc = json(&[word, CARD, "--no-store"]);
        assert_eq!(doc["command"], word);
        let key = word.replace('-', "_");
        assert!(doc[&key].is_object(), "{word}: no result under {key}: {doc}");
        assert!(doc["device_time_s"].as_f64().is_some_and(|s| s > 0.0), "{word}: {doc}");
        assert!(doc.get("error").is_none(), "{word}: {doc}");

        let text = text_with_db(&db, &[word, CARD]);
        assert!(!text.trim().is_empty(), "{word}: no text");
        let id = (n + 1).to_string();
        let stored = with_db(&db, &["results", "show", &id]);
        assert_eq!(stored["command"], word, "run {id} is {word}'s");
        let shown = text_with_db(&db, &["results", "show", &id]);
        assert_eq!(shown, text, "{word}: results show prints what the run printed");
    }
}
