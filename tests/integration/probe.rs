//! probe through the binary: every result under its key with advice on the
//! default simulated card; on a real device without --write only the
//! read-only tests run and nothing changes.

use crate::support::{LoopDevice, flashlab, json, random_file, require_loop_devices};

/// The default probe's first line, as README.md shows it (checked there
/// byte for byte by `the_readme_shows_the_default_probe_as_it_is`).
const DEMO_FIRST_LINE: &str = "sim:demo: 50.3 device-seconds of I/O (simulated)";

#[test]
fn probe_on_the_default_card_carries_every_result_and_advice() {
    let v = json(&["probe"]);
    assert_eq!(v["command"], "probe");
    assert_eq!(v["target"]["kind"], "sim");
    assert_eq!(v["info"]["transport"], "sim");
    assert_eq!(v["align"]["erase_size_bytes"], 4 << 20);
    assert_eq!(v["align"]["page_size_bytes"], 16 << 10);
    assert_eq!(v["open_au"]["linear"]["max_open_aus"], 6);
    assert_eq!(v["open_au"]["random"]["max_open_aus"], 24);
    assert_eq!(v["fat"]["fat_area_aus"], 2);
    assert_eq!(v["capacity"]["verdict"], "genuine");
    assert_eq!(v["bench"]["tests"].as_array().unwrap().len(), 4, "the quick preset");
    assert_eq!(v["bench"]["classes"]["A1"], true, "demo is an A1 card");
    assert!(
        v["device"]["key"].as_str().unwrap().starts_with("cid:"),
        "identified by its CID"
    );
    assert_eq!(v["skipped"].as_array().unwrap().len(), 0);
    let topics: Vec<&str> = v["advice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["topic"].as_str().unwrap())
        .collect();
    assert_eq!(
        topics,
        [
            "random_writes",
            "align_partitions",
            "ext4_layout",
            "f2fs_layout",
            "fat_cluster",
            "open_aus",
            "fat_area",
            "mount_options",
            "pi_root"
        ]
    );
    assert_eq!(
        v["advice"][1]["command"], "echo 'start=8192, size=62324736, type=83' | sudo sfdisk DEVICE",
        "a simulated card has no /dev path to name"
    );
    assert_eq!(v["advice"][7]["text"], "mount noatime (a read then writes nothing)");
    assert!(
        v["advice"][8]["text"]
            .as_str()
            .unwrap()
            .starts_with("Pi root: ext4, as Raspberry Pi OS has it"),
        "{}",
        v["advice"][8]
    );
    assert!(v["advice"][2]["text"].as_str().unwrap().contains("stripe-width=1024"));
    // align, open-au and fat together: more than open-au's sweep alone.
    assert!(v["device_time_s"].as_f64().unwrap() > 20.0);
    // The text form ends with the same advice and the device time.
    let out = flashlab().arg("probe").arg("sim:kingston-sa04g").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("open AUs     3 in order, 3 random"), "{text}");
    assert!(text.contains("only 3 AUs open at once"), "{text}");
    assert!(text.contains("no FAT-optimised area"), "{text}");
    flashlab().args(["probe", "sim:nope"]).assert().code(2);
}

/// A card whose speed drifts (its own heat and housekeeping; in process,
/// as the model under every real-path check): no verdict is confident and
/// wrong. At half a second a swing, open-au's in-order sweep claimed 3
/// where the card keeps 6 at 0.95 before it judged collapses again in
/// process too.
///
/// fat runs after open-au on the same card, and open-au's sweeps leave AUs
/// open in states that depend on where each sweep stopped. At two seconds
/// a swing the random sweep stops early; with fat's ordinary AUs on
/// open-au's pool, fat then found 3 AUs of FAT area and 23 random-write
/// AUs where the card has 2 and 24 (the same verdicts as probe through an
/// emulated demo card in CI). Now its ordinary AUs step around every AU
/// written before it.
#[test]
fn on_a_drifting_card_no_verdict_is_confident_and_wrong() {
    let truth = [
        ("erase_block", "bytes", 1u64 << 20),
        ("page", "bytes", 16 << 10),
        ("fat_area", "aus", 2),
    ];
    for period in ["500000000", "2000000000"] {
        let spec = format!("sim:demo,capacity=256M,au_size=1M,drift=0.5,drift_period_ns={period}");
        let v = json(&["probe", &spec, "--no-store"]);
        let s = &v["summary"];
        let mut all: Vec<(&str, &serde_json::Value, u64)> = truth.iter().map(|(k, f, t)| (*k, &s[k][f], *t)).collect();
        all.push(("in order", &s["open_aus"]["linear"]["count"], 6));
        all.push(("random", &s["open_aus"]["random"]["count"], 24));
        let conf = |k: &str| match k {
            "in order" => &s["open_aus"]["linear"]["confidence"],
            "random" => &s["open_aus"]["random"]["confidence"],
            k => &s[k]["confidence"],
        };
        for (what, value, t) in all {
            if conf(what).as_f64().unwrap_or(0.0) >= 0.9 {
                assert_eq!(value.as_u64(), Some(t), "{spec}: {what} confident and wrong: {s}");
            }
        }
    }
    let v = json(&[
        "probe",
        "sim:demo,capacity=256M,au_size=1M,drift=0.5,drift_period_ns=2000000000",
        "--no-store",
    ]);
    let f = &v["fat"];
    assert_eq!(
        (&f["method"], &f["fat_area_aus"], &f["confidence"]),
        (&"slots".into(), &2.into(), &0.95.into()),
        "{f}"
    );
    assert_eq!(f["random_aus"], 24, "{f}");
    // open-au's own random sweep stopped at another count: fat's slot test
    // is the verdict, and a note says both.
    let r = &v["open_au"]["random"];
    assert_eq!((&r["max_open_aus"], &r["confidence"]), (&24.into(), &0.9.into()), "{r}");
    assert!(
        v["open_au"]["notes"][0].as_str().unwrap().contains("fat's slot test"),
        "{}",
        v["open_au"]
    );
}

#[test]
fn probe_of_a_real_device_without_write_only_reads() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 64 << 20, 31);
    let dev = LoopDevice::attach(&f, None);
    let sha = || crate::support::sha(&dev.path);
    let before = sha();
    let v = json(&["probe", dev.as_str()]);
    assert_eq!(v["target"]["kind"], "block");
    assert!(v["open_au"].is_null() && v["fat"].is_null());
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    // A loop device over a file shows no flash behaviour, and says why;
    // capacity and bench, which need no flash, wait for --write.
    let why = skipped[0].as_str().unwrap();
    assert!(why.contains("no flash behaviour"), "{why}");
    assert!(skipped[1].as_str().unwrap().contains("add --write"), "{skipped:?}");
    assert!(v["capacity"].is_null() && v["bench"].is_null());
    assert_eq!(
        v["align"]["erase_size_bytes"],
        serde_json::Value::Null,
        "a loop device shows no flash steps"
    );
    assert!(v["align"]["not_flash"].as_str().unwrap().contains("loop device"));
    assert_eq!(sha(), before);
}

/// What a newcomer sees first fits an 80x24 terminal with the prompt: the
/// default probe (stdout and stderr together), bare `flashlab`, and the
/// compact `sim list`; no line is wider than 80 columns.
#[test]
fn the_first_screens_fit_80_by_24() {
    let run = |args: &[&str]| {
        let out = flashlab().args(args).env_remove("COLUMNS").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{args:?}: {line:?}");
        }
        text
    };
    let probe = run(&["probe", "--no-store"]);
    assert!(probe.lines().count() <= 23, "{probe}");
    let first: Vec<&str> = probe.lines().take(4).collect();
    assert!(first.contains(&DEMO_FIRST_LINE), "the verdicts come first: {probe}");
    assert!(!probe.contains("done:"), "step lines only with -v: {probe}");
    let verbose = run(&["probe", "--no-store", "-v"]);
    assert!(verbose.contains("done: open-au"), "{verbose}");
    let bare = run(&[]);
    assert!(bare.lines().count() <= 12 && bare.contains("flashlab probe"), "{bare}");
    // One line a card and a host preset: 9 and 8, 2 headings, 2 blank
    // lines, 1 pointer to `sim show`.
    let list = run(&["sim", "list"]);
    assert_eq!(list.lines().count(), 22, "{list}");
    // bench: each class family's best met and first missed; -v all 13.
    let bench = run(&["bench", "--no-store"]);
    assert!(bench.lines().count() <= 26, "{bench}");
    assert!(
        bench.contains("C10-style") && bench.contains("A2-style") && !bench.contains("C2-style"),
        "{bench}"
    );
    let all = run(&["bench", "--no-store", "-v"]);
    assert!(all.contains("C2-style") && all.contains("V90-style"), "{all}");
    // Tables as wide as the terminal keep their padding: every row of a
    // box is as wide as its top (the wrapping of long lines once squeezed
    // them to "│ path sim:kingston-sa04g │").
    let info = run(&["info", "sim:kingston-sa04g", "--registers", "--no-store"]);
    let mut width = None;
    let mut rows = 0;
    for line in info.lines() {
        if line.starts_with('┌') {
            width = Some(line.chars().count());
        } else if line.starts_with('│') {
            rows += 1;
            assert_eq!(Some(line.chars().count()), width, "{line:?} in\n{info}");
        }
    }
    assert!(rows > 20 && width == Some(80), "{info}");
}

/// Every built-in card's default probe ends with its answer on one 80x24
/// screen with the prompt: at most 23 lines of stdout and stderr together,
/// none wider than 80 columns (kingston-sa04g's 28 had scrolled its device
/// and capacity away). Advice that does not fit whole is cut, said so, and
/// whole with -v.
#[test]
fn every_built_in_cards_probe_fits_80_by_24() {
    let list = json(&["sim", "list"]);
    let names: Vec<&str> = list["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 9, "{names:?}");
    // The store where a user's goes (under XDG_DATA_HOME), which the
    // "saved as" line does not name.
    let home = crate::support::test_db().with_extension("data");
    let run = |args: &[&str]| {
        let out = flashlab()
            .args(args)
            .env_remove("COLUMNS")
            .env_remove("FLASHLAB_DB")
            .env("XDG_DATA_HOME", &home)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let (err, text) = (
            String::from_utf8(out.stderr).unwrap(),
            String::from_utf8(out.stdout).unwrap(),
        );
        assert!(err.contains("saved as run "), "{err}");
        (format!("{err}{text}"), text)
    };
    for name in names {
        let spec = format!("sim:{name}");
        let (screen, text) = run(&["probe", &spec]);
        assert!(
            screen.lines().count() <= 23,
            "{spec}: {} lines\n{screen}",
            screen.lines().count()
        );
        for line in screen.lines() {
            assert!(line.chars().count() <= 80, "{spec}: {line:?}");
        }
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with(&format!("{spec}: ")), "{text}");
        assert!(lines[1].starts_with("  device       "), "{text}");
        assert!(
            lines[2].starts_with("  capacity     genuine as far as sampled"),
            "{text}"
        );
    }
    // kingston-sa04g: each piece of advice begins on screen; the longest
    // is cut, and -v gives it whole.
    let (_, short) = run(&["probe", "sim:kingston-sa04g"]);
    assert!(
        short.contains("advice (cut to fit the screen; whole with -v, --json or the report):\n"),
        "{short}"
    );
    assert!(
        short.contains("\n  - only 3 AUs open at once for in-order writes …\n"),
        "{short}"
    );
    // Cut where a clause of the piece ends (the JSON has it whole), with
    // no parenthesis left open.
    let (_, json) = run(&["probe", "sim:kingston-sa04g", "--json"]);
    let whole: Vec<String> = serde_json::from_str::<serde_json::Value>(&json).unwrap()["advice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["text"].as_str().unwrap().to_string())
        .collect();
    let cut: Vec<&str> = short.lines().filter(|l| l.ends_with(" …")).collect();
    assert!(cut.len() >= 3, "{short}");
    for line in cut {
        assert!(line.matches('(').count() <= line.matches(')').count(), "{line:?}");
        let Some(kept) = line.strip_prefix("  - ").and_then(|l| l.strip_suffix(" …")) else {
            continue;
        };
        let ends_a_clause = whole.iter().any(|t| {
            t.strip_prefix(kept)
                .is_some_and(|rest| [";", ".", ":", ",", " ("].iter().any(|m| rest.starts_with(m)))
        });
        assert!(ends_a_clause, "{line:?} stops inside a clause of {whole:#?}");
    }
    assert!(!short.contains("one writer at a time avoids it"), "{short}");
    let (screen, all) = run(&["probe", "sim:kingston-sa04g", "-v"]);
    assert!(all.contains("\nadvice:\n"), "{all}");
    assert!(all.contains("    or one writer at a time avoids it\n"), "{all}");
    // The stored run shows as it printed: cut, and whole with -v.
    let id = screen
        .split("saved as run ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .unwrap_or_else(|| panic!("no run id: {screen}"));
    let show = |verbose: bool| {
        let mut c = flashlab();
        c.args(["results", "show", id])
            .env_remove("COLUMNS")
            .env_remove("FLASHLAB_DB");
        let out = c
            .args(verbose.then_some("-v"))
            .env("XDG_DATA_HOME", &home)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let (stored_short, stored_all) = (show(false), show(true));
    assert!(stored_short.contains("cut to fit the screen") && !stored_short.contains("one writer at a time avoids it"));
    assert!(
        stored_all.contains("\nadvice:\n    ") || stored_all.contains("\nadvice:\n  - "),
        "{stored_all}"
    );
    assert!(
        stored_all.contains("    or one writer at a time avoids it\n"),
        "{stored_all}"
    );
}

/// The README's first-ten-minutes output is what `flashlab probe` prints
/// on stdout, byte for byte.
#[test]
fn the_readme_shows_the_default_probe_as_it_is() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let shown = readme
        .split("$ flashlab probe --html demo.html\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README shows the default probe");
    let out = flashlab()
        .args(["probe", "--no-store"])
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(shown, String::from_utf8(out.stdout).unwrap());
}

/// On a terminal (a pseudo-terminal by util-linux's `script`) probe draws
/// its overall line above each step's bar and still ends with its answer:
/// the line's ETA, drawn while the steps lock their plan, had deadlocked
/// the first probe on a real terminal before any step began.
#[test]
fn on_a_terminal_probe_draws_its_overall_line_and_ends() {
    crate::support::require_program!("script", "bsdutils");
    crate::support::require_program!("timeout", "coreutils");
    let bin = assert_cmd::cargo::cargo_bin("flashlab");
    let out = std::process::Command::new("timeout")
        .arg("120")
        .args(["script", "-qec"])
        .arg(format!("'{}' probe --no-store", bin.display()))
        .arg("/dev/null")
        .envs(crate::support::test_env())
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(DEMO_FIRST_LINE), "{text}");
    assert!(text.contains("ETA …, budget "), "the overall line: {text}");
}

/// bench's figures in probe are bench's alone, within 2x, on generated hard
/// cards (budget example's hard family) where the steps before it leave
/// the card merging: the first random writes after them pay 2 merges of
/// 2.7 s (seed 135144) and 5 of a second (seed 179212). probe had said 11
/// and 7 random writes a second, drawn from 66 requests, where bench alone
/// said 605 and 1098; now its test runs on until no 8 requests hold half
/// its time.
#[test]
fn probes_random_writes_are_benchs_after_the_merges_the_steps_before_leave() {
    let hard = "host=am335x-hsmmc,page_size=4096,outlier_factor=30,keep_data=true";
    for card in [
        "capacity=3221225472,sector_size=4096,au_size=33554432,open_aus_linear=5,open_aus_random=3,fat_area_aus=6,\
         jitter=0.239,outlier_fraction=0.012,seed=135144",
        "capacity=19654508544,sector_size=512,au_size=12582912,open_aus_linear=27,open_aus_random=15,\
         fat_area_aus=4,jitter=0.143,outlier_fraction=0.006,seed=179212",
    ] {
        let spec = format!("sim:demo,{hard},{card}");
        let random_write = |command: &str| {
            let v = json(&[command, &spec, "--no-store"]);
            let tests = v["bench"]["tests"].as_array().unwrap().clone();
            let t = tests.iter().find(|t| t["rw"] == "randwrite").unwrap().clone();
            assert_eq!(t["short_sample"], false, "{command} {spec}: {t}");
            assert!(t["requests"].as_u64().unwrap() >= 1000, "{command} {spec}: {t}");
            t["iops"].as_f64().unwrap()
        };
        let (probe, bench) = (random_write("probe"), random_write("bench"));
        assert!(
            probe.max(bench) <= 2.0 * probe.min(bench),
            "{spec}: probe {probe:.0} against bench {bench:.0} random writes a second"
        );
    }
}
