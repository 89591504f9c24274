//! `flashlab import flashbench` on real published flashbench outputs
//! (tests/fixtures/flashbench, each with its source and the expert's
//! reading): every verdict agrees with the expert or is marked unsure;
//! input that is not flashbench's is refused, a row cut mid-paste skipped
//! naming its line; imported runs are stored and
//! shown, compared and drawn like any run.

use std::path::{Path, PathBuf};

use crate::support::{flashlab, json, test_db};

fn fixture(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/flashbench");
    let hit = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(name)))
        .unwrap_or_else(|| panic!("no fixture {name}"));
    hit.display().to_string()
}

/// A size verdict agrees with the expert, or is not claimed with confidence.
fn agrees_or_unsure(v: &serde_json::Value, key: &str, conf: &str, expert: u64) {
    let got = v[key].as_u64();
    let c = v[conf].as_f64().unwrap_or(0.0);
    assert!(
        got == Some(expert) || c < 0.9,
        "{key} {got:?} at {c} against the expert's {expert}"
    );
}

fn limit(doc: &serde_json::Value, order: &str) -> (Option<u64>, u64, Option<u64>, f64) {
    let s = &doc["open_au"][order];
    (
        s["max_open_aus"].as_u64(),
        s["tried_up_to"].as_u64().unwrap_or(0),
        s["at_most"].as_u64(),
        s["confidence"].as_f64().unwrap_or(0.0),
    )
}

#[test]
fn arnds_readme_example_reads_4_mib_and_2_open_aus() {
    let d = json(&["import", "flashbench", &fixture("02_"), "--no-store"]);
    assert_eq!(d["command"], "import flashbench");
    agrees_or_unsure(&d["align"], "erase_size_bytes", "confidence", 4 << 20);
    assert_eq!(d["align"]["erase_size_bytes"], 4 << 20);
    // "8 KB pages read two at a time": the 8 KiB row sits between levels,
    // so whatever page is named is unsure.
    assert!(d["align"]["page_confidence"].as_f64().unwrap() < 0.9, "{}", d["align"]);
    let (n, _, _, _) = limit(&d, "linear");
    assert_eq!(n, Some(2), "{}", d["open_au"]);
    assert_eq!(d["import"]["tool"], "flashbench");
    assert_eq!(d["import"]["tables"].as_array().unwrap().len(), 3);
}

/// Real flashbench output of an emulated card whose truth is known, read
/// under load: one random run's smallest row alone 1.8x slower at a count
/// the card keeps open is no collapse.
#[test]
fn an_emulated_cards_flashbench_run_under_load_reads_as_the_card_is() {
    let d = json(&["import", "flashbench", &fixture("e1_"), "--no-store"]);
    assert_eq!(d["align"]["erase_size_bytes"], 1 << 20, "{}", d["align"]);
    assert_eq!(d["align"]["page_size_bytes"], 16 << 10, "{}", d["align"]);
    assert_eq!(limit(&d, "linear").0, Some(3), "{}", d["open_au"]["linear"]);
    assert_eq!(limit(&d, "random").0, Some(2), "{}", d["open_au"]["random"]);
}

#[test]
fn patriots_8_mib_is_read_and_its_cut_table_is_said() {
    let d = json(&["import", "flashbench", &fixture("03_"), "--no-store"]);
    agrees_or_unsure(&d["align"], "erase_size_bytes", "confidence", 8 << 20);
    assert_eq!(d["align"]["erase_size_bytes"], 8 << 20, "{}", d["align"]["evidence"]);
    let notes = d["notes"].to_string();
    assert!(notes.contains("stops at 128 KiB"), "{notes}");
}

#[test]
fn kingston_blog_reads_3_open_aus_each_way_and_the_card_by_its_cid() {
    let d = json(&["import", "flashbench", &fixture("004_"), "--no-store"]);
    // "probably 2 or 4 MiB ... assume 4 MiB".
    let e = d["align"]["erase_size_bytes"].as_u64();
    assert!(
        e == Some(4 << 20) || d["align"]["confidence"].as_f64().unwrap() < 0.9,
        "{e:?}"
    );
    assert_eq!(limit(&d, "linear").0, Some(3), "{}", d["open_au"]);
    assert_eq!(limit(&d, "random").0, Some(3), "{}", d["open_au"]);
    // "There doesn't appear to be any special FAT area".
    assert_eq!(d["fat"]["fat_area_aus"], 0);
    // The CID pasted in the post gives the key a flashlab run of the card has.
    let key = d["device"]["key"].as_str().unwrap();
    assert!(key.starts_with("cid:02:TM:SA04G:"), "{key}");
}

#[test]
fn bergmanns_toshiba_keeps_7_and_sandisk_20() {
    for (name, want) in [("46_", 7), ("47_", 20)] {
        let d = json(&["import", "flashbench", &fixture(name), "--no-store"]);
        let (n, up_to, _, c) = limit(&d, "linear");
        assert!(n == Some(want) || (n.is_none() && c < 0.9), "{name}: {n:?} {up_to} {c}");
        assert_eq!(n, Some(want), "{name}: {}", d["open_au"]);
    }
}

#[test]
fn olpcs_side_by_side_table_wants_a_column_and_reads_each_card() {
    let f = fixture("06_");
    let out = flashlab()
        .args(["import", "flashbench", &f, "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error:") && err.contains("--column HighPerf") && err.contains(":16"),
        "{err}"
    );
    let cmd = "--open-au --open-au-nr=5 --random --blocksize=4096 --erasesize=4194304";
    // Arnd's high-performance card keeps 5 random open AUs; A, B, C and the
    // unusable card collapse at 5; A1 is "intermediate".
    for (col, keeps_five) in [
        ("HighPerf", Some(true)),
        ("A(C2-4GB)", Some(false)),
        ("A1(C2-4GB)", None),
        ("B(C4-4GB)", Some(false)),
        ("C(C2-8GB)", Some(false)),
        ("Unusable", Some(false)),
    ] {
        let d = json(&[
            "import",
            "flashbench",
            &f,
            "--no-store",
            "--column",
            col,
            "--command",
            cmd,
        ]);
        let (n, up_to, at_most, c) = limit(&d, "random");
        let says_five = n.map(|n| n >= 5).or(if up_to >= 5 {
            Some(true)
        } else {
            at_most.map(|m| m >= 5)
        });
        match keeps_five {
            Some(k) if c >= 0.9 => assert_eq!(says_five, Some(k), "{col}: {}", d["open_au"]),
            Some(false) => assert_eq!(says_five, Some(false), "{col}: {}", d["open_au"]),
            _ => {}
        }
        if keeps_five.is_none() {
            assert!(
                c < 0.9,
                "{col}: the expert's 'intermediate' is no confident answer: {c}"
            );
        }
    }
}

#[test]
fn text_that_is_not_flashbench_output_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.txt");
    std::fs::write(
        &p,
        "hello\nthis is an fdisk listing\nDisk /dev/sdb: 1 GiB, 1073741824 bytes\n",
    )
    .unwrap();
    let out = flashlab()
        .args(["import", "flashbench"])
        .arg(&p)
        .arg("--no-store")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error:") && err.contains("no flashbench output") && err.contains("hint:"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_broken_row_inside_a_table_is_skipped_naming_its_line_and_a_cut_last_row_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.txt");
    let mut text = String::from("$ sudo ./flashbench -a /dev/sdb\n");
    for (k, b) in [8u64 << 20, 4 << 20, 2 << 20, 1 << 20, 512 << 10, 256 << 10, 128 << 10]
        .iter()
        .enumerate()
    {
        text += &match k {
            // Line 4.
            2 => format!("align {b}\tpre 1ms\ton 1.2XX\tpost 1ms\tdiff 200µs\n"),
            0 | 1 => format!("align {b}\tpre 1ms\ton 1.2ms\tpost 1ms\tdiff 200µs\n"),
            _ => format!("align {b}\tpre 1ms\ton 1.01ms\tpost 1ms\tdiff 10µs\n"),
        };
    }
    std::fs::write(&broken, text).unwrap();
    let d = json(&["import", "flashbench", broken.to_str().unwrap(), "--no-store"]);
    assert_eq!(
        d["warnings"][0]["message"],
        format!(
            "{}:4: 'align 2097152 pre 1ms on 1.2XX post 1ms diff 200µs' is not a whole flashbench row (the on \
             time '1.2XX' is not a time): skipped, the rest imported",
            broken.display()
        )
    );
    let rows: Vec<u64> = d["align"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["boundary_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, [8 << 20, 4 << 20, 1 << 20, 512 << 10, 256 << 10, 128 << 10]);
    // The output quoted in flashbench issue #16 (docs/SOURCES.md) ends
    // mid-row; its negative diffs have no unit.
    let cut = dir.path().join("issue16.txt");
    std::fs::write(
        &cut,
        "align 34359738368       pre 986µs       on 1.01ms       post 1.87ms     diff -412331\n\
         align 17179869184       pre 833µs       on 1.19ms       post 875µs      diff 335µs\n\
         align 8589934592        pre 690µs       on 1.01ms       post 1.44ms     diff -49389n\n\
         align 4294967296        pre 1.13ms      on 1.43ms       post 1.67ms     diff 32.7µs\n\
         align 2147483648        pre 582µs       on 935µs        post 1.63ms     diff -173123\n\
         align 1073741824        pre 1.21ms      on 1.39ms       post 1.61ms     diff -18714n\n\
         align 536870912 pre 980µs       on 1.1ms        post 986µs      diff 114µs\n\
         align 268435456 pre 650µs       on 1.09ms       post 1ms        diff 263µs\n\
         align 134217728 pre 1.53ms      on 1.53ms       post 1.15ms     diff 187µs\n\
         align 67108864  pre 3.42ms      on 3.24ms       post 1.97ms     diff 549µs\n\
         align 33554432  pre 1.07ms      on 1.18ms       post 1.21ms     diff 43.4µs\n\
         align 16777216  pre 1.31ms      on 1.96ms       post 2.01ms     diff 299µs\n\
         align 8388608   pre 995µs       on 1.2ms        post 1.01ms     diff 199µs\n\
         align 4194304   pre 3.38ms      on 2.87ms       post 1.07ms     diff 641µs\n\
         align 2097152   pre 1.75ms      on 1.59ms       post 1.62ms     diff -93720n\n\
         align 1048576   pre 1.04ms\n",
    )
    .unwrap();
    let d = json(&["import", "flashbench", cut.to_str().unwrap(), "--no-store"]);
    let notes = d["notes"].to_string();
    assert!(notes.contains(":16: an -a row is cut off"), "{notes}");
    assert!(notes.contains("flashbench issue #16"), "{notes}");
    assert!(
        d["align"]["confidence"].as_f64().unwrap() < 0.9,
        "noise this large gives no confident size"
    );
    assert_eq!(d["align"]["rows"].as_array().unwrap().len(), 15);
}

/// flashbench's `format_ns` prints into 8 bytes: 1,000 µs as "1e+03µ", a
/// negative diff without its unit, each read and said in a note; a row a
/// paste cut mid-way is skipped with a warning naming its line.
#[test]
fn format_ns_cut_units_are_read_and_said_and_a_row_cut_mid_paste_is_skipped() {
    let f = fixture("h1_");
    let d = json(&["import", "flashbench", &f, "--no-store"]);
    let rows = d["align"]["rows"].as_array().unwrap();
    let row = |b: u64| rows.iter().find(|r| r["boundary_bytes"] == b).unwrap();
    // Line 13: "pre 1e+03µ ... post 998µs".
    assert_eq!(
        (row(64 << 20)["pre_ns"].as_f64(), row(64 << 20)["post_ns"].as_f64()),
        (Some(1e6), Some(998e3))
    );
    // Line 20: "diff -49389n"; line 26: "diff -102331".
    assert_eq!(row(512 << 10)["diff_ns"].as_f64(), Some(-49_389.0));
    assert_eq!(row(8 << 10)["diff_ns"].as_f64(), Some(-102_331.0));
    assert_eq!(rows.len(), 15, "every row but line 24's");
    assert!(rows.iter().all(|r| r["boundary_bytes"] != 32 << 10));
    assert_eq!(d["align"]["erase_size_bytes"], 4 << 20);
    assert_eq!(
        d["notes"][0]["message"],
        format!(
            "flashbench printed 2 negative diffs without a unit ({f} lines 20, 26): a negative time always takes its \
             ns branch, whose \"ns\" its 8-byte buffer cuts (bradfa/flashbench issue #16); read as nanoseconds; a \
             negative diff means the crossing read was faster than its neighbours, which is noise"
        )
    );
    assert_eq!(
        d["notes"][1]["message"],
        format!(
            "flashbench printed 17 times as \"1e+03µ\" ({f} lines 13, 14, 15 and 10 more): 1,000 µs to its three \
             digits, whose \"s\" its 8-byte buffer cuts (µ takes two bytes); read as 1,000 µs"
        )
    );
    assert_eq!(
        d["warnings"][0]["message"],
        format!(
            "{f}:24: 'align 32768 pre 1e+03µ on 1.01ms po' is not a whole flashbench row (it is cut off before its \
             diff): skipped, the rest imported"
        )
    );
    assert_eq!(d["warnings"].as_array().unwrap().len(), 1);
}

#[test]
fn an_imported_run_is_listed_shown_compared_and_drawn() {
    let db = test_db();
    let _ = std::fs::remove_file(&db);
    let text = std::fs::read(fixture("004_")).unwrap();
    let out = flashlab()
        .args(["import", "flashbench", "-", "--db"])
        .arg(&db)
        .write_stdin(text)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("flashbench output: -") && shown.contains("open AUs     3 in order, 3 random"),
        "{shown}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("saved as run 1"));
    let db_s = db.to_str().unwrap();
    let list = json(&["results", "list", "--db", db_s, "--device", "SA04G"]);
    assert_eq!(list["runs"][0]["command"], "import flashbench");
    let again = json(&["results", "show", "1", "--db", db_s]);
    assert_eq!(again["open_au"]["linear"]["max_open_aus"], 3);
    let probe = json(&["probe", "sim:kingston-sa04g", "--db", db_s]);
    assert!(probe["summary"].is_object());
    let cmp = json(&["results", "compare", "1", "2", "--db", db_s]);
    let rows = cmp["rows"].to_string();
    assert!(rows.contains("open AUs"), "{rows}");
    let dir = tempfile::tempdir().unwrap();
    let html: PathBuf = dir.path().join("r.html");
    flashlab()
        .args(["report", "1", "2", "--db", db_s, "-o"])
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<svg") && page.contains("import flashbench"),
        "the report draws the imported run"
    );
}

/// A run saved in a store --db named says so, and the commands it
/// suggests name that store: pasted into a shell (the path has a space),
/// they show the run, not the default store's.
#[test]
fn saved_in_a_named_store_the_suggested_commands_read_that_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("my runs").join("r.sqlite");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let out = flashlab()
        .args(["import", "flashbench", &fixture("004_"), "--db"])
        .arg(&db)
        .env("XDG_DATA_HOME", dir.path().join("elsewhere"))
        .env_remove("FLASHLAB_DB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8(out.stderr).unwrap().replace('\n', " ");
    let quoted = format!("'{}'", db.display());
    let show = err
        .split('`')
        .find(|part| part.starts_with("flashlab results show 1"))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(show, format!("flashlab results show 1 --db {quoted}"));
    assert!(err.contains(&format!("`flashlab report 1 --db {quoted}`")), "{err}");
    let bin = assert_cmd::cargo::cargo_bin("flashlab");
    let shown = std::process::Command::new("sh")
        .arg("-c")
        .arg(show.replacen("flashlab", &bin.to_string_lossy(), 1))
        .env("XDG_DATA_HOME", dir.path().join("elsewhere"))
        .env_remove("FLASHLAB_DB")
        .output()
        .unwrap();
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(text.contains("open AUs     3 in order, 3 random"), "{text}");
    // `results list` and `results import` of that store suggest the same,
    // and the default store's import suggests no --db.
    let said = |args: &[&str], env_db: Option<&std::path::Path>| {
        let mut cmd = flashlab();
        cmd.args(args).env("XDG_DATA_HOME", dir.path().join("elsewhere"));
        match env_db {
            Some(p) => cmd.env("FLASHLAB_DB", p),
            None => cmd.env_remove("FLASHLAB_DB"),
        };
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().replace('\n', " ")
    };
    let db_text = db.to_str().unwrap();
    let listed = said(&["results", "list", "--db", db_text], None);
    assert!(
        listed.contains(&format!("`flashlab results show ID --db {quoted}`")),
        "{listed}"
    );
    let exported = dir.path().join("run.json");
    let json = said(&["results", "export", "1", "--db", db_text], None);
    std::fs::write(&exported, json).unwrap();
    let again = said(&["results", "import", exported.to_str().unwrap()], Some(&db));
    assert!(
        again.contains(&format!(
            "already stored as run 1 in {}: not stored again",
            db.display()
        )) && again.contains(&format!("`flashlab results show 1 --db {quoted}`")),
        "{again}"
    );
    let default = said(&["results", "import", exported.to_str().unwrap()], None);
    assert!(
        default.contains("stored as run 1 (`flashlab results show 1`,"),
        "{default}"
    );
}

/// An open-AU-only import says why, how sure, and what to do, as probe
/// does; a file naming its command in prose says how to give it.
#[test]
fn an_open_au_import_gives_its_reasons_confidence_and_advice() {
    let out = flashlab()
        .args(["import", "flashbench", &fixture("46_"), "--no-store"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for want in [
        "open AUs 7 in order, random not measured",
        "- in order: at 6 and 7 AUs the rates held; at 8 they collapsed (256 KiB writes: 13.00 MB/s at 7, \
         1.53 MB/s at 8); confidence 0.95",
        "advice: - 7 AUs open for in-order writes: several files can be written at once",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
    let d = json(&["import", "flashbench", &fixture("46_"), "--no-store"]);
    assert_eq!(d["advice"][0]["topic"], "open_aus");
    let f = fixture("06_");
    let d = json(&["import", "flashbench", &f, "--no-store", "--column", "B(C4-4GB)"]);
    assert_eq!(
        d["notes"][0]["message"],
        format!(
            "{f}:3 names the command these tables came from, `flashbench --open-au --open-au-nr=5 --random \
             --blocksize=4096 --erasesize=${{preferred_erase_size:-4194304}}`: give it with --command '--open-au \
             --open-au-nr=5 --random --blocksize=4096 --erasesize=${{preferred_erase_size:-4194304}}' to judge them"
        )
    );
    assert_eq!(
        d["notes"][1]["message"],
        format!(
            "{f}:17: an --open-au table without its command line: the number of AUs it wrote is unknown, so it is \
             shown but not judged: give the flashbench line with --command, as in `--command \"--open-au \
             --open-au-nr=N --random --erasesize=4194304\"` (or paste it above the table)"
        )
    );
}

/// A run whose rates read neither as fine nor as collapsed bounds
/// nothing: the line says "unclear", not "no limit up to 0".
#[test]
fn an_unclear_run_is_said_unclear() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("one-row.txt");
    std::fs::write(
        &f,
        "# ./flashbench --open-au --open-au-nr=2 --erasesize=4194304 /dev/x\n4MiB    5.0M/s\n",
    )
    .unwrap();
    let out = flashlab()
        .args(["import", "flashbench", "--no-store"])
        .arg(&f)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("open AUs     unclear in order"), "{text}");
    assert!(!text.contains("up to 0"), "{text}");
}

/// An option's value the import cannot read is a warning, not silence;
/// a count of 0 is refused as outside any run, not as "larger".
#[test]
fn unread_option_values_are_warned_and_a_zero_count_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("huge.txt");
    std::fs::write(
        &f,
        "# ./flashbench --open-au --erasesize=18446744073709551616 /dev/x\n4MiB 5.0M/s\n2MiB 5.0M/s\n",
    )
    .unwrap();
    let v = json(&["import", "flashbench", "--no-store", f.to_str().unwrap()]);
    let said = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["message"].as_str());
    let said: Vec<&str> = said.filter(|m| m.contains("not read")).collect();
    assert_eq!(said.len(), 1, "{v}");
    assert!(said[0].ends_with(":1: flashbench's --erasesize 18446744073709551616 not read (a shell variable, or a number past 2^64): the tables are judged without it"), "{said:?}");
    let zero = dir.path().join("zero.txt");
    std::fs::write(&zero, "# ./flashbench --open-au --open-au-nr=0 /dev/x\n4MiB 5.0M/s\n").unwrap();
    crate::support::refused(
        flashlab().args(["import", "flashbench", "--no-store"]).arg(&zero),
        "--open-au-nr 0 is outside what any flashbench run prints",
    );
}
