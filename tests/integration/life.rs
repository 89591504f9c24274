//! `flashlab life` through the binary: the same capture read from each of
//! its forms gives the same trace, a generated trace meets the closed form
//! through the CLI, the contract's keys are there, and bad input is refused
//! with a hint and exit 2, nothing saved.

use std::path::{Path, PathBuf};

use crate::support::{flashlab, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace")
        .join(name)
}

fn life(trace: &Path, more: &[&str]) -> serde_json::Value {
    let t = trace.to_str().unwrap();
    json(&[&["life", t, "--no-store"], more].concat())
}

/// fio's randwrite job of 256 writes of 4 KiB (tests/fixtures/trace/README.md),
/// read from blktrace's binary files, blkparse's text and fio's own log.
#[test]
fn every_form_of_one_capture_gives_the_same_trace_and_answer() {
    let card = ["--card", "sim:kingston-sa04g", "--start", "fresh"];
    let mut answers = Vec::new();
    for (name, format) in [
        ("randw.blktrace.0.zst", "blktrace"),
        ("randw.blkparse.txt.zst", "blkparse"),
        ("randw.iolog.zst", "fio-v3"),
    ] {
        let doc = life(&fixture(name), &card);
        let l = &doc["life"];
        assert_eq!(l["trace"]["format"], format, "{name}");
        assert_eq!(l["trace"]["writes"], 256, "{name}");
        assert_eq!(l["trace"]["host_bytes_written"], 1 << 20, "{name}");
        assert_eq!(l["trace"]["reads"], 0, "{name}");
        assert_eq!(l["card"], "sim:kingston-sa04g");
        // 256 writes of 4 KiB, each a partial 16 KiB page of the card.
        assert_eq!(l["by_cause"]["partial_page"], 256 * 16384, "{name}");
        answers.push((l["flash_bytes_written"].clone(), l["erases"].clone()));
    }
    // The device's order is the same in each: the same flash work.
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], answers[2]);
}

/// A generated fio v3 log writing a 64 MiB card from start to end in 512
/// KiB requests: amplification exactly 1, one erase per AU.
#[test]
fn a_sequential_full_card_write_through_the_cli_amplifies_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("seq.iolog");
    let mut text = String::from("fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n");
    for i in 0..128u64 {
        text += &format!("{} /dev/x write {} {}\n", i * 1000, i * (512 << 10), 512 << 10);
    }
    text += "128000 /dev/x close\n";
    std::fs::write(&log, text).unwrap();
    for start in ["fresh", "steady"] {
        let doc = life(&log, &["--card", "sim:kingston-sa04g,capacity=64M", "--start", start]);
        let l = &doc["life"];
        assert_eq!(l["waf"], 1.0, "{start}");
        assert_eq!(l["flash_bytes_written"], 64 << 20, "{start}");
        assert_eq!(l["by_cause"]["merge"], 0, "{start}");
        assert_eq!(l["erases"], 16, "{start}: one switch merge per AU");
        assert_eq!(l["trace"]["span_s"], 0.127);
    }
}

#[test]
fn what_ifs_and_other_cards_are_lines_beside_the_baseline() {
    let doc = life(
        &fixture("mixed.blktrace.0.zst"),
        &[
            "--card",
            "sim:kingston-sa04g",
            "--card",
            "sim:emmc-hs400",
            "--coalesce",
            "30s",
            "--no-discard",
            "--shift",
            "1G",
        ],
    );
    let l = &doc["life"];
    let what: Vec<&str> = l["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        what,
        ["coalesce 30.00 s", "shift 1 GiB", "no discard", "card sim:emmc-hs400"]
    );
    assert_eq!(l["other_cards"][0]["card"], "sim:emmc-hs400");
    assert_eq!(l["trace"]["discards"], 4);
    // The capture's 11 `D FN` lines (blkparse's text of it): fio's fsync
    // every 4 writes, and at the job's end.
    assert_eq!(l["trace"]["flushes"], 11);
    // The Kingston card is 4 GB: a shift of 1 GiB still fits.
    assert!(l["what_if"][1]["error"].is_null());
    // A shift to the card's last 4 KiB leaves the trace no room: a what-if
    // that cannot be (one past the card's end is refused, below).
    let shifted = life(
        &fixture("mixed.blktrace.0.zst"),
        &["--card", "sim:kingston-sa04g", "--shift", "3904892928"],
    );
    let err = shifted["life"]["what_if"][0]["error"].as_str().unwrap();
    assert!(err.contains("past the card's end"), "{err}");
}

fn refused(args: &[&str], says: &str) {
    crate::support::refused(flashlab().args(args).arg("--no-store"), says);
}

#[test]
fn bad_input_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.txt");
    std::fs::write(&garbage, "hello\nworld\n").unwrap();
    let g = garbage.to_str().unwrap();
    refused(&["life", g, "--card", "sim:demo"], "not a block trace");
    let bad_line = dir.path().join("bad.iolog");
    std::fs::write(
        &bad_line,
        "fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n5 /dev/x write 0 zz\n",
    )
    .unwrap();
    refused(&["life", bad_line.to_str().unwrap(), "--card", "sim:demo"], "line 4");
    let big = dir.path().join("big.iolog");
    std::fs::write(
        &big,
        "fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n5 /dev/x write 1099511627776 4096\n",
    )
    .unwrap();
    refused(
        &["life", big.to_str().unwrap(), "--card", "sim:demo"],
        "past the card's end",
    );
    refused(&["life", g], "--card");
    let f = fixture("randw.iolog.zst");
    let f = f.to_str().unwrap();
    refused(&["life", f, "--card", "sim:demo", "--pe", "0"], "--pe");
    refused(&["life", f, "--card", "sim:nope"], "nope");
    refused(&["life", "/dev/null", "--card", "sim:demo"], "regular file");
    refused(
        &["life", "/nonexistent/trace", "--card", "sim:demo"],
        "/nonexistent/trace",
    );
    // A second request 9.3e9 s after the first overflowed the replay's
    // clock (a panic); a shift past the card's end gave a what-if.
    let long = dir.path().join("long.blk");
    std::fs::write(
        &long,
        "  8,0 0 1 0.000000000 1 D W 2048 + 8 [dd]\n  8,0 0 2 9300000000.000000000 1 D W 4096 + 8 [dd]\n",
    )
    .unwrap();
    refused(&["life", long.to_str().unwrap(), "--card", "sim:demo"], "line 2");
    refused(
        &["life", f, "--card", "sim:demo", "--shift", "18446744073709551615"],
        "past the card's end",
    );
}

#[test]
fn the_answer_is_stored_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let db = db.to_str().unwrap();
    let f = fixture("randw.blkparse.txt.zst");
    let out = flashlab()
        .args(["life", f.to_str().unwrap(), "--card", "sim:kingston-sa04g", "--db", db])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("amplification"), "{text}");
    let list = json(&["results", "list", "--db", db]);
    let runs = list["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["command"], "life");
    assert!(
        runs[0]["verdict"].as_str().unwrap().contains("amplification"),
        "{}",
        runs[0]
    );
    let shown = json(&["results", "show", "1", "--db", db]);
    assert_eq!(shown["life"]["card"], "sim:kingston-sa04g");
    // A second card's answer, compared: amplification, flash a day, years.
    json(&["life", f.to_str().unwrap(), "--card", "sim:demo", "--db", db]);
    let compared = json(&["results", "compare", "1", "2", "--db", db]);
    let rows = compared["rows"].as_array().unwrap();
    let row = |id: &str| {
        rows.iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {rows:?}"))
    };
    let waf = row("amplification");
    assert_eq!(waf["values"][0], shown["life"]["waf"]);
    assert_eq!(waf["better"], "lower");
    assert_eq!(row("flash_bytes_per_day")["unit"], "bytes");
    // The report draws it: flash by cause, the passes, the erase spread.
    let html = dir.path().join("life.html");
    let out = flashlab()
        .args(["report", "1", "--db", db, "-o", html.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    for title in [
        "written to flash for",
        "write amplification, pass by pass",
        "what costs most",
    ] {
        assert!(page.contains(title), "the report lacks {title:?}");
    }
    assert!(page.matches("<svg").count() >= 3);
}

/// `--card RUN_ID`: a stored probe's geometry made the card. A probe of
/// the Kingston card measures its geometry, so the model made from it does
/// the flash work the card itself does under the same trace.
#[test]
fn a_stored_probe_is_a_card() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let db = db.to_str().unwrap();
    json(&["probe", "sim:kingston-sa04g", "--db", db]);
    json(&["info", "sim:demo", "--db", db]);
    let f = fixture("randw.blktrace.0.zst");
    let f = f.to_str().unwrap();
    let doc = json(&[
        "life",
        f,
        "--card",
        "1",
        "--card",
        "sim:kingston-sa04g",
        "--start",
        "fresh",
        "--no-store",
        "--db",
        db,
    ]);
    let l = &doc["life"];
    let card = l["card"].as_str().unwrap();
    assert!(
        card.starts_with("run 1 (AU 4 MiB, page 16 KiB, 3 open in order, 3 random"),
        "{card}"
    );
    let truth = &l["other_cards"][0];
    assert_eq!(truth["card"], "sim:kingston-sa04g");
    assert_eq!(l["flash_bytes_written"], truth["flash_bytes_written"]);
    assert_eq!(l["erases"], truth["erases"]);
    assert!(l["flash_bytes_written"].as_u64().unwrap() > 1 << 20);
    refused(&["life", f, "--card", "2", "--db", db], "not a probe");
    refused(&["life", f, "--card", "9", "--db", db], "no run 9");
}

/// A probe stopped by its budget before the open-AU and FAT steps settled
/// (erase block and page sure, the rest unsure) is two cards: its unsure
/// verdicts at their worst (one AU open each way, no FAT area) and at
/// their best. The answer is the range between them, the worst end doing
/// at least the flash work of the best; and the true card lies within.
#[test]
fn an_unsure_probe_is_replayed_at_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let db = db.to_str().unwrap();
    let probe = json(&["probe", "sim:kingston-sa04g", "--budget", "1", "--db", db]);
    let open = &probe["summary"]["open_aus"];
    assert_eq!(
        (
            open["linear"]["unsure"].as_bool(),
            probe["summary"]["erase_block"]["unsure"].as_bool()
        ),
        (Some(true), Some(false)),
        "{open}"
    );
    let f = fixture("randw.blktrace.0.zst");
    let doc = json(&[
        "life",
        f.to_str().unwrap(),
        "--card",
        "1",
        "--card",
        "sim:kingston-sa04g",
        "--start",
        "fresh",
        "--no-store",
        "--db",
        db,
    ]);
    let l = &doc["life"];
    let worst = l["card"].as_str().unwrap();
    assert!(worst.starts_with("run 1 (AU 4 MiB, page 16 KiB, 1 open in order, 1 random, FAT area 0 AUs, its unsure verdicts at their worst"), "{worst}");
    let others = l["other_cards"].as_array().unwrap();
    let best = others
        .iter()
        .find(|c| c["card"].as_str().unwrap().contains("at their best"))
        .expect("the best end");
    let truth = others.iter().find(|c| c["card"] == "sim:kingston-sa04g").unwrap();
    let bytes = |v: &serde_json::Value| v["flash_bytes_written"].as_u64().unwrap();
    assert!(bytes(l) >= bytes(best), "worst {} best {}", bytes(l), bytes(best));
    assert!(
        (bytes(best)..=bytes(l)).contains(&bytes(truth)),
        "the card itself lies within: {} in {}..={}",
        bytes(truth),
        bytes(best),
        bytes(l)
    );
}
