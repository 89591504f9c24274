//! `--format` (fio's `--output-format`): one choice of output for every
//! command, `--json` its alias, and a format that cannot show a command's
//! document refused before the command runs.

use crate::support::{flashlab, json};

fn stdout(args: &[&str]) -> String {
    let out = flashlab().args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "flashlab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn each_format_is_chosen_by_format_and_json_is_its_alias() {
    let by_format: serde_json::Value =
        serde_json::from_str(&stdout(&["align", "sim:demo", "--no-store", "--format", "json"])).unwrap();
    let by_json = json(&["align", "sim:demo", "--no-store"]);
    assert_eq!(by_format["align"], by_json["align"]);
    assert_eq!(by_format["command"], "align");

    let csv = stdout(&["scatter", "sim:demo", "--no-store", "--format", "csv"]);
    assert_eq!(csv, stdout(&["scatter", "sim:demo", "--no-store", "--csv"]));
    assert_eq!(csv.lines().next(), Some("offset_bytes,latency_ns"));

    let toml = stdout(&["sim", "show", "demo", "--format=toml"]);
    assert_eq!(toml, stdout(&["sim", "show", "demo", "--toml"]));
    assert!(toml.contains("\ncapacity = 31914983424"), "{toml}");

    let html = stdout(&["align", "sim:demo", "--no-store", "--format", "html"]);
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..80.min(html.len())]);
    assert!(html.contains("align"));

    let text = stdout(&["align", "sim:demo", "--no-store", "--format", "text"]);
    assert_eq!(text, stdout(&["align", "sim:demo", "--no-store"]));

    // A stored run in any format it has: results show reads no device, so
    // the run decides.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let db = db.to_str().unwrap();
    stdout(&["scatter", "sim:demo", "--db", db]);
    assert_eq!(stdout(&["results", "show", "1", "--db", db, "--format", "csv"]), csv);
    let html = stdout(&["results", "show", "1", "--db", db, "--format", "html"]);
    assert!(html.starts_with("<!DOCTYPE html>"));
}

#[test]
fn a_format_that_cannot_show_the_command_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    for (args, words) in [
        (
            vec!["probe", "sim:demo", "--format", "csv"],
            "--format csv does not fit probe",
        ),
        (
            vec!["align", "sim:demo", "--format", "toml"],
            "--format toml does not fit align",
        ),
        (
            vec!["sim", "list", "--format", "html"],
            "--format html does not fit sim list",
        ),
    ] {
        let out = flashlab().args(&args).env("FLASHLAB_DB", &db).output().expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words) && err.contains("\nhint: "), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!db.exists(), "a refused run stored nothing");
    // --json is --format json: both at once is a usage error, and its
    // document still comes as JSON.
    let out = flashlab()
        .args(["align", "sim:demo", "--json", "--format", "text"])
        .output()
        .expect("runs");
    let doc = crate::support::document(&out, 2, "--json with --format text");
    assert_eq!(doc["error"]["kind"], "usage");
}
