//! `flashlab batch` on simulated cards through the binary: the rows and
//! their verdicts, labels, the table at 80 columns, CSV, the stored runs
//! by batch, and bad input refused with a hint and exit 2. The same through
//! real block devices is `emulate::batch`. Simulated device time costs no
//! wall time, so bench runs its full 5 device-seconds a test here (a
//! second's write judged C10 missed on a merge stall).

use crate::support::{flashlab, json, test_db};

const WRAP: &str = "sim:demo,capacity=1G,real_capacity=256M,fake_mode=wrap";
const SLOW: &str = "sim:demo,capacity=512M,host=at91-mci";

#[test]
fn rows_say_fake_slow_and_genuine_with_the_rule_that_decided() {
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("slots.txt");
    std::fs::write(&labels, "# the shelf\nsim2   shelf A2\n\n").unwrap();
    let db = test_db();
    let args = [
        "batch",
        "sim:demo",
        WRAP,
        SLOW,
        "sim:demo,capacity=2G",
        "--label",
        "sim4=spare",
        "--label",
        "sim9=gone",
        "--label",
        "sim1=first",
        "--label",
        "sim:demo=twice",
        "--labels",
        labels.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ];
    let v = json(&args);
    let rows = v["batch"]["rows"].as_array().unwrap();
    let got: Vec<(&str, &str, Option<&str>, Option<u64>)> = rows
        .iter()
        .map(|r| {
            (
                r["slot"].as_str().unwrap(),
                r["verdict"].as_str().unwrap(),
                r["label"].as_str(),
                r["usable_bytes"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("sim1", "PASS", Some("first"), Some(31_914_983_424)),
            ("sim2", "FAIL", Some("shelf A2"), Some(256 << 20)),
            ("sim3", "SUSPECT", None, Some(512 << 20)),
            ("sim4", "PASS", Some("spare"), Some(2 << 30)),
        ]
    );
    // A label for a slot no device is in is named, not dropped in silence.
    let warned: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "label")
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        warned,
        [
            "the label `gone` is for sim9, and no device given here is sim9: unused",
            "the label `twice` is for sim:demo, which took the label `first`: unused"
        ]
    );
    assert_eq!(rows[1]["why"], "fake (wrap): 256 MiB usable of 1 GiB announced");
    assert_eq!(rows[1]["fake_kind"], "wrap");
    let median = v["batch"]["medians"]["read_mb_s"].as_f64().unwrap();
    let slow = rows[2]["read_mb_s"].as_f64().unwrap();
    assert!(slow < 0.5 * median, "{slow} against {median}");
    assert!(
        rows[2]["why"].as_str().unwrap().contains("the batch's median"),
        "{}",
        rows[2]["why"]
    );
    assert_eq!(rows[0]["device"], "sim:demo");
    assert_eq!(rows[0]["results"]["capacity"]["verdict"], "genuine");
    assert!(
        rows[0]["results"]["bench"]["tests"]
            .as_array()
            .is_some_and(|t| t.len() == 4)
    );
    // Each device's run is stored, tagged; the batch lists them.
    let id = v["batch"]["id"].as_str().unwrap();
    let listed = json(&["results", "list", "--batch", id, "--db", db.to_str().unwrap()]);
    let mut ids: Vec<i64> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    ids.sort();
    let mut stored: Vec<i64> = rows.iter().map(|r| r["run_id"].as_i64().unwrap()).collect();
    stored.sort();
    assert_eq!(ids, stored);
    // Each labelled slot's run is listed by its label, and found by it.
    let mut labels: Vec<&str> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["label"].as_str())
        .collect();
    labels.sort_unstable();
    assert_eq!(labels, ["first", "shelf A2", "spare"], "{listed}");
    let spare = json(&[
        "results",
        "list",
        "--batch",
        id,
        "--label",
        "SPARE",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(spare["runs"].as_array().map(Vec::len), Some(1), "{spare}");
    let none = json(&[
        "results",
        "list",
        "--batch",
        "no-such-batch",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(none["runs"].as_array().map(Vec::len), Some(0));
    let shown = json(&["results", "show", &stored[0].to_string(), "--db", db.to_str().unwrap()]);
    assert_eq!(shown["batch"]["id"], id, "a device's run carries its batch");
    // One report draws the batch's runs side by side.
    let html = dir.path().join("shelf.html");
    let out = flashlab()
        .args([
            "report",
            "--batch",
            id,
            "--db",
            db.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    for spec in [WRAP, SLOW, "sim:demo,capacity=2G"] {
        assert!(page.contains(spec), "the report draws {spec}");
    }
}

#[test]
fn a_class_the_card_claims_and_misses_is_suspect() {
    let v = json(&["batch", "sim:demo", "--claims", "v60", "--no-store"]);
    let row = &v["batch"]["rows"][0];
    assert_eq!(row["verdict"], "SUSPECT", "{row}");
    assert_eq!(row["claims"], "V60 (--claims)");
    assert!(
        row["why"]
            .as_str()
            .unwrap()
            .starts_with("claims V60 (--claims) but missed it here"),
        "{}",
        row["why"]
    );
    let v = json(&["batch", "sim:demo", "--claims", "C10", "--no-store"]);
    assert_eq!(
        v["batch"]["rows"][0]["verdict"], "PASS",
        "{}",
        v["batch"]["rows"][0]["why"]
    );
}

#[test]
fn the_table_fits_80_columns_and_csv_has_a_line_per_device() {
    let out = flashlab()
        .args(["batch", "sim:demo", WRAP, "--no-store"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    let last = text.lines().last().unwrap();
    assert!(
        last.contains("2 devices, 1 PASS, 1 FAIL"),
        "the answer ends the screen: {text}"
    );
    let csv = flashlab()
        .args(["batch", "sim:demo", WRAP, "--no-store", "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout).into_owned();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("batch,slot,device,label,identity,bus,announced_bytes,usable_bytes,fake_kind"));
    assert!(
        lines[2].contains(&format!(",\"{WRAP}\",")),
        "a field with commas is quoted: {}",
        lines[2]
    );
    assert!(
        lines[2].contains(",wrap,") && lines[2].contains(",FAIL,fake (wrap): 256 MiB usable of 1 GiB announced,"),
        "{}",
        lines[2]
    );
}

#[test]
fn bad_input_is_refused_with_a_hint_and_nothing_saved() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let unlabelled = dir.path().join("slots.txt");
    std::fs::write(&unlabelled, "sim1 A\nsim2\n").unwrap();
    let u = unlabelled.to_str().unwrap();
    for (args, says) in [
        (vec!["batch"], "batch has no device to test"),
        (vec!["batch", "sim:demo", "--label", "sim1"], "WHERE=LABEL"),
        (vec!["batch", "sim:demo", "--claims", "X9"], "not an SD class"),
        (vec!["batch", "sim:demo", "--tests", "fio"], "invalid value"),
        (vec!["batch", "sim:demo", "--labels", u], "line 2: `sim2` has no label"),
        (vec!["batch", "sim:demo", "--labels", "/dev/null"], "labels file"),
        (
            vec!["batch", "sim:demo", "--labels", "/nonexistent/slots"],
            "labels file",
        ),
        (vec!["batch", "sim:demo,capacity=-1"], "error"),
        (vec!["batch", "--watch", "sim:demo"], "sim:demo is not a block device"),
        (vec!["batch", "--watch", "--all-removable"], "cannot be used with"),
    ] {
        let out = flashlab().args(&args).arg("--db").arg(&db).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("error:") && err.contains(says), "{args:?}: {err}");
        assert!(
            err.contains("hint:") || err.contains("Usage") || err.contains("--help"),
            "{args:?}: {err}"
        );
        assert!(!db.exists(), "{args:?} saved nothing");
    }
}

/// `batch DEVICES --write`, its journals in `dir`, a second of each of
/// bench's tests: the document.
fn written(dir: &std::path::Path, devices: &[&str]) -> serde_json::Value {
    let d = dir.to_str().unwrap();
    let opts = ["--write", "--runtime", "1s", "--no-store", "--journal-dir", d];
    json(&[&["batch"], devices, &opts[..]].concat())
}

/// The same card named twice (a file and a hard link to it) is tested
/// once; the second row says which it repeats.
#[test]
fn the_same_bytes_under_two_names_are_one_device() {
    let dir = tempfile::tempdir().unwrap();
    let file = crate::support::random_file(dir.path(), "card.img", 64 << 20, 7);
    let link = dir.path().join("alias.img");
    std::fs::hard_link(&file, &link).unwrap();
    let before = crate::support::sha(&file);
    let v = written(dir.path(), &[file.to_str().unwrap(), link.to_str().unwrap()]);
    let rows = v["batch"]["rows"].as_array().unwrap();
    assert_eq!(rows[0]["verdict"], "PASS", "{}", rows[0]["why"]);
    assert_eq!(rows[1]["verdict"], "skipped");
    assert_eq!(
        rows[1]["why"],
        format!("the same device as {}, given twice", file.display())
    );
    assert_eq!(crate::support::sha(&file), before, "every byte kept");
    let out = flashlab()
        .args(["batch", file.to_str().unwrap(), link.to_str().unwrap(), "--no-store"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().find(|l| l.starts_with("alias.img")).unwrap();
    assert!(
        row.split_whitespace().nth(2) == Some("-") && row.ends_with("skipped"),
        "{text}"
    );
}

/// A loop device is its backing file's bytes: named with the file, it is
/// tested once. And a file's or a loop device's speeds (the page cache's)
/// are never judged against the batch's median.
#[test]
fn a_loop_device_and_its_file_are_one_device() {
    crate::support::require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let file = crate::support::random_file(dir.path(), "card.img", 64 << 20, 9);
    let other = crate::support::random_file(dir.path(), "other.img", 64 << 20, 10);
    let lo = crate::support::LoopDevice::attach(&file, None);
    let v = written(
        dir.path(),
        &[lo.as_str(), file.to_str().unwrap(), other.to_str().unwrap()],
    );
    let rows = v["batch"]["rows"].as_array().unwrap();
    assert_eq!(rows[1]["verdict"], "skipped");
    assert_eq!(
        rows[1]["why"],
        format!("the same device as {}, given twice", lo.as_str())
    );
    assert_eq!(
        (rows[0]["verdict"].as_str(), rows[2]["verdict"].as_str()),
        (Some("PASS"), Some("PASS"))
    );
    assert!(
        v["batch"]["medians"]["read_mb_s"].is_null(),
        "{}",
        v["batch"]["medians"]
    );
    assert!(rows[0]["read_mb_s"].as_f64().is_some(), "the figure is still shown");
}

/// `--tests probe`: every step of probe on each device, its rows
/// judged from probe's capacity and bench.
#[test]
fn probe_in_a_batch_runs_every_step() {
    let v = json(&["batch", "sim:kingston-sa04g", WRAP, "--tests", "probe", "--no-store"]);
    let rows = v["batch"]["rows"].as_array().unwrap();
    for key in ["align", "open_au", "fat", "capacity", "bench"] {
        assert!(rows[0]["results"].get(key).is_some(), "{key} in {}", rows[0]["results"]);
    }
    assert_eq!(rows[1]["verdict"], "FAIL", "{}", rows[1]["why"]);
    assert_eq!(rows[1]["usable_bytes"], 256u64 << 20);
}

/// A card known by what it holds. One whose run was cut (here by a crash)
/// and that shows up under another name (a copy stands for the card moved
/// to another reader) is not tested there: its earlier journal waits, and
/// testing it would journal the crashed run's pattern as its original.
/// Back under its own name, its data comes back first and it passes. Two
/// cards that hold the same blocks say so.
#[test]
fn a_card_moved_while_its_journal_waits_is_recognised_by_its_content() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let card = crate::support::random_file(dir.path(), "card.img", 64 << 20, 11);
    let before = crate::support::sha(&card);
    let crashed = flashlab()
        .args([
            "batch",
            card.to_str().unwrap(),
            "--write",
            "--tests",
            "capacity",
            "--no-store",
        ])
        .args(["--journal-dir", d])
        .env("FLASHLAB_CRASH_AT", "device write#3")
        .output()
        .unwrap();
    assert_eq!(crashed.status.code(), None, "killed at the crash point");
    let moved = dir.path().join("moved.img");
    std::fs::copy(&card, &moved).unwrap();
    let moved_sha = crate::support::sha(&moved);
    // Its one device skipped, the batch tested nothing: a refusal, exit 2,
    // its table still in the document.
    let out = flashlab()
        .args(["batch", moved.to_str().unwrap(), "--write", "--tests", "capacity"])
        .args(["--no-store", "--journal-dir", d, "--json"])
        .output()
        .unwrap();
    let v = crate::support::document(&out, 2, "batch of the moved card");
    assert_eq!(
        v["error"]["message"],
        "no device was tested: the one device was skipped (see the table)"
    );
    let row = &v["batch"]["rows"][0];
    assert_eq!(row["verdict"], "skipped", "{row}");
    let why = row["why"].as_str().unwrap();
    assert!(
        why.contains(&format!("this card's earlier run, in {}", card.display())),
        "{why}"
    );
    assert_eq!(crate::support::sha(&moved), moved_sha, "nothing written to it");

    let v = written(dir.path(), &[card.to_str().unwrap()]);
    let row = &v["batch"]["rows"][0];
    assert_eq!(row["verdict"], "PASS", "{row}");
    assert!(
        row["restored"].as_str().is_some_and(|r| r.contains("put back")),
        "{row}"
    );
    assert_eq!(crate::support::sha(&card), before, "its data is back");

    let copy = dir.path().join("copy.img");
    std::fs::copy(&card, &copy).unwrap();
    let v = written(dir.path(), &[card.to_str().unwrap(), copy.to_str().unwrap()]);
    let rows = v["batch"]["rows"].as_array().unwrap();
    let fp = rows[0]["identity"]["fingerprint"].as_str().unwrap();
    assert!(fp.starts_with("crc32:"), "{fp}");
    assert_eq!(rows[1]["identity"]["fingerprint"], fp);
    assert_eq!(rows[1]["same_content_as"], rows[0]["slot"]);
    assert_eq!(rows[0].get("same_content_as"), None);
}

/// A step that fails says so once, on a line that starts with its
/// device's name like every line of that device: "sim1: failed: sim1:
/// capacity" had named it twice.
#[test]
fn a_failed_step_is_named_once_after_its_device() {
    let out = flashlab()
        .args(["batch", "sim:demo,capacity=256M,bad_ranges=0+268435456", "--no-store"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("failed:")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].starts_with("sim1: failed: capacity ("), "{err}");
    // Its one device failed, the batch tested nothing to the end: exit 1,
    // the device's reason as the hint.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: no device's tests ran to the end: the one device failed")
            && err.contains("hint: what stopped sim1 is on its line above and in its row"),
        "{err}"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("FAIL") && table.contains("Input/output error"),
        "{table}"
    );
}

/// A path no test could open is skipped with why (not with "add --write",
/// which would not help), and two labels for one slot are refused.
#[test]
fn a_path_that_cannot_be_tested_says_why_and_labels_are_one_each() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-card.img");
    let v = json(&[
        "batch",
        "sim:demo",
        missing.to_str().unwrap(),
        dir.path().to_str().unwrap(),
        "--no-store",
    ]);
    let rows = v["batch"]["rows"].as_array().unwrap();
    let whys: Vec<&str> = rows.iter().map(|r| r["why"].as_str().unwrap()).collect();
    assert_eq!(rows[1]["verdict"], "skipped");
    assert!(whys[1].contains("no such file or device"), "{whys:?}");
    assert!(whys[2].contains("not a block device or regular file"), "{whys:?}");
    // Alone, nothing was tested: exit 2, the path named once in the hint.
    let out = flashlab()
        .args(["batch", missing.to_str().unwrap(), "--no-store", "--json"])
        .output()
        .unwrap();
    let v = crate::support::document(&out, 2, "a batch of a missing path");
    let hint = v["error"]["hint"].as_str().unwrap();
    assert!(
        hint.starts_with(&format!("{}: no such file", missing.display())),
        "{hint}"
    );
    assert_eq!(hint.matches("no-such-card.img").count(), 1, "{hint}");
    let labels = dir.path().join("labels");
    std::fs::write(&labels, "sim1 shelf-B\n").unwrap();
    crate::support::refused(
        flashlab()
            .args(["batch", "sim:demo", "--label", "sim1=shelf-A", "--labels"])
            .arg(&labels)
            .arg("--no-store"),
        "sim1 is labelled twice: `shelf-A` and `shelf-B`",
    );
}
