//! The results store through the CLI: runs saved as they land, listed by
//! device, shown, compared, exported and imported (duplicates recognised);
//! two runs saving at once; a store that cannot be written or read costs a
//! warning, not the run, and the store's own commands refuse it.

use crate::support::{flashlab, json, text_with_db, with_db};

#[test]
fn runs_are_saved_listed_compared_exported_and_imported_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    // A device-second each: a figure from less is a short sample, which
    // a comparison does not rank.
    let a = with_db(&db, &["bench", "sim:demo", "--rw", "randread", "--runtime", "1s"]);
    let b = with_db(
        &db,
        &["bench", "sim:kingston-sa04g", "--rw", "randread", "--runtime", "1s"],
    );
    let list = with_db(&db, &["results", "list"]);
    let runs = list["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{list}");
    let (kid, did) = (runs[0]["id"].as_i64().unwrap(), runs[1]["id"].as_i64().unwrap());
    assert!(
        runs[0]["device"].as_str().unwrap().to_lowercase().contains("kingston"),
        "{list}"
    );
    let only = with_db(&db, &["results", "list", "--device", "kingston"]);
    assert_eq!(only["runs"].as_array().unwrap().len(), 1);
    // A stored run reads back as the run printed it.
    let shown = with_db(&db, &["results", "show", &did.to_string()]);
    assert_eq!(shown["bench"], a["bench"]);
    let c = with_db(&db, &["results", "compare", &did.to_string(), &kid.to_string()]);
    let iops = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"].as_str().unwrap().ends_with("IOPS"))
        .unwrap();
    let (x, y) = (iops["values"][0].as_f64().unwrap(), iops["values"][1].as_f64().unwrap());
    assert_eq!(x, a["bench"]["tests"][0]["iops"].as_f64().unwrap());
    assert_eq!(y, b["bench"]["tests"][0]["iops"].as_f64().unwrap());
    assert_eq!(iops["best"], if x > y { 0 } else { 1 }, "{iops}");
    assert!((iops["relative"][1].as_f64().unwrap() - (y / x - 1.0)).abs() < 1e-9);
    // Each run is named by the target it was given, and its column by its
    // id and the time it ran ("#1" and "#2" alone).
    assert_eq!(c["runs"][0]["target"], "sim:demo", "{c}");
    assert_eq!(c["runs"][1]["target"], "sim:kingston-sa04g", "{c}");
    let text = flashlab()
        .args(["results", "compare", &did.to_string(), &kid.to_string(), "--db"])
        .arg(&db)
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    let first = text.lines().next().unwrap_or("");
    assert!(first.starts_with(&format!("#{did}: bench of sim:demo on 20")), "{text}");
    let hhmm = |l: &str| {
        l.split_whitespace()
            .filter(|w| w.len() == 5 && w.as_bytes()[2] == b':' && w.replace(':', "").parse::<u32>().is_ok())
            .count()
    };
    let header = text.lines().find(|l| l.contains("figure")).unwrap_or("");
    assert!(
        header.contains(&format!("#{did}")) && header.contains(&format!("#{kid}")),
        "{text}"
    );
    let below = text.lines().skip_while(|l| !l.contains("figure")).nth(1).unwrap_or("");
    assert_eq!(hhmm(below), 2, "each run's time under its id: {text}");
    // Export, then import into the same store: recognised; into another: new.
    let out = flashlab()
        .args(["results", "export", &did.to_string(), "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let file = dir.path().join("run.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let again = with_db(&db, &["results", "import", file.to_str().unwrap()]);
    assert_eq!(
        (again["id"].as_i64(), again["duplicate"].as_bool()),
        (Some(did), Some(true))
    );
    let other = dir.path().join("other.sqlite");
    let fresh = with_db(&other, &["results", "import", file.to_str().unwrap()]);
    assert_eq!(fresh["duplicate"], false);
    // The --json output of a run imports as the same run.
    let f2 = dir.path().join("a.json");
    std::fs::write(&f2, serde_json::to_vec(&a).unwrap()).unwrap();
    assert_eq!(
        with_db(&db, &["results", "import", f2.to_str().unwrap()])["duplicate"],
        true
    );
}

#[test]
fn two_runs_saving_at_once_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.sqlite");
    let spawn = |spec: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_flashlab"))
            .args(["probe", spec, "--json", "--db"])
            .arg(&db)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let kids: Vec<_> = (0..4).map(|i| spawn(&format!("sim:demo,seed={}", i + 1))).collect();
    for k in kids {
        let out = k.wait_with_output().unwrap();
        assert!(out.status.success());
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("warning"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let list = with_db(&db, &["results", "list"]);
    assert_eq!(list["runs"].as_array().unwrap().len(), 4, "{list}");
}

#[test]
fn a_store_that_cannot_be_written_is_a_warning_and_the_run_still_prints() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("not-a-db.sqlite");
    std::fs::write(&bad, vec![0x5a; 8192]).unwrap();
    let out = flashlab()
        .args(["align", "sim:demo", "--json", "--db"])
        .arg(&bad)
        .output()
        .unwrap();
    let v = crate::support::document(&out, 0, "align beside a store it cannot read");
    assert!(v["align"].is_object());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: the run is not saved") && err.contains("hint:"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&bad).unwrap(),
        vec![0x5a; 8192],
        "the bad file is left as it was"
    );
    // A directory where the store should be.
    let out = flashlab()
        .args(["align", "sim:demo", "--db"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
    // --no-store: nothing saved, nothing said.
    let db = dir.path().join("none.sqlite");
    let out = flashlab()
        .args(["align", "sim:demo", "--no-store", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!db.exists());
}

#[test]
fn bad_results_input_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    json(&["align", "sim:demo", "--db", db.to_str().unwrap()]);
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"not\": \"a run\"}").unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for args in [
        vec!["results", "show", "999"],
        vec!["results", "import", junk.to_str().unwrap()],
        vec!["results", "import", fifo.to_str().unwrap()],
        vec!["results", "compare", "1", "999"],
        vec!["report", "999", "-o", "/tmp/never.html"],
    ] {
        let out = flashlab().args(&args).arg("--db").arg(&db).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error:") && err.contains("hint:"), "{args:?}: {err}");
    }
    assert!(!std::path::Path::new("/tmp/never.html").exists());
}

/// Found by a hostile walk-through: each of these once failed late, wrote
/// a duplicate or printed nothing for scripts.
#[test]
fn late_failures_duplicates_and_silent_json_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    // A probe's own --json output imports as the run already stored (its
    // floats survive the round trip).
    let probe = with_db(&db, &["probe", "sim:demo,capacity=48M,au_size=1M,open_aus_random=4"]);
    // A target too small for capacity's default push gets a smaller one.
    assert!(probe["capacity"].is_object(), "{}", probe["skipped"]);
    let f = dir.path().join("probe.json");
    std::fs::write(&f, serde_json::to_vec(&probe).unwrap()).unwrap();
    let imported = with_db(&db, &["results", "import", f.to_str().unwrap()]);
    assert_eq!(imported["duplicate"], true, "{imported}");
    // A document of a command that is not a measuring one is refused.
    let mut odd = probe.clone();
    odd["command"] = "rm -rf".into();
    std::fs::write(&f, serde_json::to_vec(&odd).unwrap()).unwrap();
    let out = flashlab()
        .args(["results", "import", f.to_str().unwrap(), "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // --html that cannot be written is refused before any step runs.
    let out = flashlab()
        .args(["probe", "sim:demo", "--html"])
        .arg(dir.path())
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a directory") && !err.contains("done:"), "{err}");
    // An erase size of 0 is refused by the argument parser.
    flashlab().args(["probe", "--erase-size", "0"]).assert().code(2);
    // A bad command line with --json still prints one JSON document.
    let out = flashlab().args(["bench", "--bs", "3x", "--json"]).output().unwrap();
    let v = crate::support::document(&out, 2, "bench --bs 3x");
    assert_eq!(
        (v["command"].as_str(), v["error"]["kind"].as_str()),
        (Some("bench"), Some("usage"))
    );
    // A store that cannot be written is a warning scripts can see.
    let v = {
        let out = flashlab()
            .args(["align", "sim:demo", "--json", "--db"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(v["warnings"][0]["kind"], "store", "{v}");
}

/// `results list` tells runs of one device apart: the target as given
/// (sim overrides included), what each found, and "read-only" for a probe
/// that skipped its writing steps for want of --write.
#[test]
fn the_list_says_what_each_run_found_and_whether_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let f = crate::support::random_file(dir.path(), "card.img", 64 << 20, 7);
    let dev = crate::support::LoopDevice::attach(&f, None);
    with_db(&db, &["probe", dev.as_str()]);
    with_db(&db, &["capacity", "sim:demo,real_capacity=1G"]);
    let list = with_db(&db, &["results", "list"]);
    let runs = list["runs"].as_array().unwrap();
    assert_eq!(runs[0]["target"], "sim:demo,real_capacity=1G", "{list}");
    let fake = runs[0]["verdict"].as_str().unwrap();
    assert_eq!(fake, "capacity FAKE: announces 29.72 GiB, holds 1 GiB");
    let probe = runs[1]["verdict"].as_str().unwrap();
    assert!(probe.ends_with("read-only"), "{probe}");
    // And on the screen, each target whole on its line.
    let out = flashlab().args(["results", "list", "--db"]).arg(&db).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("read-only"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

/// A store whose schema version no flashlab reads (below 0, far above this
/// one's) or another program's database: the store's own commands refuse
/// it with a hint, a measuring run still measures and says the run is not
/// saved and why, and the file is left byte for byte (switching a store
/// to WAL rewrites its header, so the version is read before that).
#[test]
fn a_store_flashlab_cannot_read_is_refused_and_probe_still_prints() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &str); 3] = [
        ("negative", "PRAGMA user_version = -1", "schema version -1"),
        ("future", "PRAGMA user_version = 1000000", "schema version 1000000"),
        ("foreign", "PRAGMA user_version = 0", "another program's database"),
    ];
    for (name, pragma, why) in cases {
        let db = dir.path().join(format!("{name}.sqlite"));
        {
            let c = rusqlite::Connection::open(&db).unwrap();
            c.execute_batch("CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine');")
                .unwrap();
            c.execute_batch(pragma).unwrap();
        }
        let before = std::fs::read(&db).unwrap();
        for args in [
            vec!["results", "list"],
            vec!["results", "show", "1"],
            vec!["report", "1", "-o"],
        ] {
            let mut cmd = flashlab();
            cmd.args(&args);
            if args[0] == "report" {
                cmd.arg(dir.path().join("never.html"));
            }
            let out = cmd.arg("--db").arg(&db).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {err}");
            assert!(
                err.starts_with("error: ") && err.contains(why) && err.contains("\nhint: "),
                "{name} {args:?}: {err}"
            );
            assert!(!err.contains("panicked"), "{name} {args:?}: {err}");
        }
        let out = flashlab()
            .args(["probe", "sim:demo", "--db"])
            .arg(&db)
            .output()
            .unwrap();
        let (text, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {err}");
        assert!(
            text.contains("erase block") && text.contains("\nadvice"),
            "{name}: the probe's answer: {text}"
        );
        assert!(
            err.contains("warning: the run is not saved") && err.contains(why) && err.contains("hint: "),
            "{name}: {err}"
        );
        assert!(!err.contains("saved as run"), "{name}: {err}");
        assert!(
            std::fs::read(&db).unwrap() == before,
            "{name}: the store is left as it was"
        );
        assert!(!dir.path().join("never.html").exists());
    }
}

/// Runs are named by their card, not their path: the label given at run
/// time, the card's model and serial, and `results list --label` finds a
/// labelled run again. A label that is not one short line is refused.
#[test]
fn runs_are_listed_by_their_label_and_card() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    with_db(&db, &["info", "sim:demo", "--label", "shelf 3"]);
    with_db(&db, &["info", "sim:kingston-sa04g", "--label", "Reader B"]);
    with_db(&db, &["info", "sim:demo"]);
    let list = with_db(&db, &["results", "list"]);
    let labels: Vec<Option<&str>> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str())
        .collect();
    assert_eq!(labels, [None, Some("Reader B"), Some("shelf 3")], "{list}");
    let only = with_db(&db, &["results", "list", "--label", "reader"]);
    let runs = only["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{only}");
    assert_eq!(runs[0]["target"], "sim:kingston-sa04g");
    assert_eq!(only["label_filter"], "reader");
    // The text names each run's card: its label, target and model with
    // serial, in one cell.
    let text = text_with_db(&db, &["results", "list"]);
    let row = text.lines().find(|l| l.contains("\"Reader B\"")).unwrap_or_default();
    assert!(
        row.contains(
            "\"Reader B\" sim:kingston-sa04g Toshiba/Kingston/Viking SA04G, 3.64 GiB (sim; serial 0x35338909)"
        ),
        "{text}"
    );
    let none = text_with_db(&db, &["results", "list", "--label", "shelf 9"]);
    assert!(none.starts_with("no run in "), "{none}");
    assert!(none.contains("has a label containing 'shelf 9'"), "{none}");
    for bad in ["", "two\nlines", &"x".repeat(65)] {
        let out = flashlab()
            .args(["info", "sim:demo", "--no-store", "--label", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error: invalid value") && err.contains("hint:"), "{err}");
    }
}

/// Two runs side by side read as people read them: a sequential test as
/// MB/s, a change past ten times as a ratio, no "better" for a larger
/// card, and the SD classes compared. Six runs are one table of the
/// figures that differ, a run a row, every line within 80 columns.
#[test]
fn runs_compare_as_rates_ratios_and_classes_and_many_as_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let cards = ["sim:demo", "sim:kingston-sa04g", "sim:sandisk-2gb"];
    for card in cards {
        with_db(&db, &["bench", card]);
        with_db(&db, &["capacity", card]);
    }
    let c = with_db(&db, &["results", "compare", "1", "3"]);
    let rows = c["rows"].as_array().unwrap();
    let row = |id: serde_json::Value| {
        rows.iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {c}"))
    };
    let iops = row(serde_json::json!({"bench": {"test": "randwrite 4 KiB Q1", "figure": "iops", "sequential": false}}));
    let (a, b) = (iops["values"][0].as_f64().unwrap(), iops["values"][1].as_f64().unwrap());
    assert!(a / b >= 10.0, "the demo card is over ten times faster here: {iops}");
    let c10 = row(serde_json::json!({"class": {"class": "C10"}}));
    assert_eq!(
        (c10["values"][0].as_f64(), c10["values"][1].as_f64()),
        (Some(1.0), Some(0.0)),
        "{c10}"
    );
    let text = text_with_db(&db, &["results", "compare", "1", "3"]);
    let line = |start: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("│ {start} ")))
            .unwrap_or_else(|| panic!("no row {start}: {text}"))
            .to_string()
    };
    assert!(
        line("randwrite 4 KiB Q1 IOPS").contains(&format!("(1/{}x)", (a / b).round())),
        "{text}"
    );
    assert!(line("read 1 MiB Q1 rate").contains(" MB/s "), "{text}");
    assert!(
        !text.contains("read 1 MiB Q1 IOPS"),
        "a sequential test is its rate: {text}"
    );
    assert!(line("SD classes met").contains("C10 U3 V30 A1"), "{text}");
    let two = with_db(&db, &["results", "compare", "2", "4"]);
    let capacity = two["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "usable_capacity")
        .unwrap();
    assert!(capacity["values"][0] != capacity["values"][1], "{two}");
    assert_eq!(capacity["best"], serde_json::Value::Null, "a larger card is not better");
    // Six runs at 80 columns: a run a row, never a record per figure.
    let out = flashlab()
        .args(["results", "compare", "1", "2", "3", "4", "5", "6", "--db"])
        .arg(&db)
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= 80, "{widest} columns: {text}");
    assert!(text.lines().count() <= 60, "{} lines: {text}", text.lines().count());
    for id in 1..=6 {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("│ #{id} "))),
            "run #{id} a row: {text}"
        );
    }
    assert!(text.lines().any(|l| l.starts_with("│ run ")), "{text}");
}

/// A run document edited to figures no run writes is refused on import,
/// and nothing is stored.
#[test]
fn an_import_with_impossible_times_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = json(&["scatter", "sim:demo", "--no-store"]);
    let db = dir.path().join("r.sqlite");
    for (key, value) in [
        ("device_time_s", serde_json::json!(1e308)),
        ("device_time_s", serde_json::json!(-5.0)),
        ("started_unix", serde_json::json!(u64::MAX)),
        ("ended_unix", serde_json::json!(u64::MAX)),
    ] {
        let mut doc = good.clone();
        doc[key] = value.clone();
        let f = dir.path().join("run.json");
        std::fs::write(&f, doc.to_string()).unwrap();
        crate::support::refused(
            flashlab().args(["results", "import"]).arg(&f).arg("--db").arg(&db),
            "are not a run's",
        );
        assert!(!db.exists(), "{key}={value}: a store was made");
    }
}
