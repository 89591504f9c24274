//! Simulated cards through the binary: `info` on sims (registers decoded as on a
//! real card), `sim list`/`sim show`, and bad specs.

use predicates::prelude::*;

use crate::support::{flashlab, json};

#[test]
fn info_defaults_to_the_demo_card_and_says_it_is_simulated() {
    let v = json(&["info"]);
    assert_eq!(v["target"]["spec"], "sim:demo");
    assert_eq!(v["target"]["kind"], "sim");
    assert_eq!(v["target"]["size_bytes"], 31_914_983_424u64);
    assert_eq!(v["info"]["transport"], "sim");
    let mmc = &v["info"]["mmc"];
    assert_eq!(mmc["csd"]["capacity_bytes"], 31_914_983_424u64);
    assert_eq!(mmc["ssr"]["au_size_bytes"], 4 << 20);
    assert_eq!(mmc["ssr"]["app_perf_class"], "A1");
    assert_eq!(mmc["preferred_erase_size_source"], "ssr_au");
    assert!(mmc["notes"].as_array().unwrap().is_empty(), "{mmc}");
    flashlab()
        .arg("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("simulated card"));
}

#[test]
fn kingston_sim_carries_the_seed_registers() {
    let v = json(&["info", "sim:kingston-sa04g"]);
    assert_eq!(v["target"]["size_bytes"], 3_904_897_024u64);
    let mmc = &v["info"]["mmc"];
    assert_eq!(mmc["cid"]["product_name"], "SA04G");
    assert_eq!(mmc["cid"]["manufacture_year"], 2013);
    assert_eq!(mmc["csd"]["capacity_bytes"], 3_904_897_024u64);
    assert_eq!(mmc["scr"]["spec_version"], "3.0x");
    assert_eq!(mmc["preferred_erase_size_bytes"], 4 << 20);
    assert_eq!(mmc["preferred_erase_size_source"], "kernel_capacity_guess");
    // The bytes themselves, for `flashlab decode`, and they
    // decode to what info says.
    let cid = mmc["raw_hex"]["cid"].as_str().unwrap();
    assert_eq!(cid, "02544d5341303447113533890900d371");
    let d = json(&["decode", "cid", cid]);
    assert_eq!(d["product_name"], mmc["cid"]["product_name"], "{d}");
    assert_eq!(mmc["raw_hex"]["csd"].as_str().map(str::len), Some(32));
    assert!(mmc["raw_hex"].get("ssr").is_none(), "kingston's SSR is not read");
}

#[test]
fn overrides_and_toml_files() {
    let v = json(&["info", "sim:demo,capacity=1G,au_size=12M,sector_size=4k"]);
    assert_eq!(v["target"]["size_bytes"], 1u64 << 30);
    assert_eq!(v["target"]["logical_block_size"], 4096);
    let dir = tempfile::tempdir().unwrap();
    let toml = flashlab()
        .args(["sim", "show", "kingston-sa04g", "--toml"])
        .output()
        .unwrap();
    assert!(toml.status.success());
    let path = dir.path().join("card.toml");
    std::fs::write(&path, &toml.stdout).unwrap();
    let spec = format!("sim:{},open_aus_linear=5", path.display());
    let shown = json(&["sim", "show", &spec]);
    assert_eq!(shown["params"]["open_aus_linear"], 5);
    assert_eq!(shown["params"]["capacity"], 3_904_897_024u64);
    assert_eq!(shown["params"]["cid"], "02544d5341303447113533890900d371");
    // A built-in profile changed by its spec: the summary is the built-in
    // card's (demo's "4 MiB AU"), said as such, and the values are this one's.
    let out = flashlab()
        .args(["sim", "show", "sim:demo,au_size=1M"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "sim:demo,au_size=1M", "{text}");
    assert!(
        lines[1].starts_with("  changes sim:demo, built in as present-day"),
        "{text}"
    );
    assert!(text.contains("au_size                  1048576 bytes"), "{text}");
    // The command it suggests runs as one command when copied into a
    // shell, though a list value's `;` would end it there.
    let spec = "sim:demo,lead_program_ns=5000000;4000000";
    let out = flashlab().args(["sim", "show", spec]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let suggested = text
        .split('`')
        .find(|part| part.starts_with("flashlab sim show"))
        .unwrap_or_else(|| panic!("{text}"))
        .replace('\n', " ");
    assert!(suggested.contains(&format!("'{spec}'")), "{suggested}");
    let bin = assert_cmd::cargo::cargo_bin("flashlab");
    let toml = std::process::Command::new("sh")
        .arg("-c")
        .arg(suggested.replacen("flashlab", &bin.to_string_lossy(), 1))
        .output()
        .unwrap();
    let toml = String::from_utf8(toml.stdout).unwrap();
    assert!(toml.contains("lead_program_ns = \"5000000;4000000\""), "{toml}");
}

/// The `name` of every entry of `v[key]`.
fn names<'a>(v: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect()
}

#[test]
fn sim_list_names_every_profile_and_host() {
    let v = json(&["sim", "list"]);
    let profiles = names(&v, "profiles");
    for want in [
        "demo",
        "kingston-sa04g",
        "sandisk-512mb",
        "sandisk-2gb",
        "toshiba-7au",
        "sandisk-20au",
        "emmc-hs400",
        "cf-sandisk-ultra2",
        "cf-simpletech-oem",
    ] {
        assert!(profiles.contains(&want), "{want} missing from {profiles:?}");
    }
    let hosts = names(&v, "hosts");
    for want in [
        "at91-mci",
        "sdhci-hs400",
        "sdhci-hs400-hsq",
        "netbsd-ata-pio",
        "netbsd-ata-pio-multi",
    ] {
        assert!(hosts.contains(&want), "{want} missing from {hosts:?}");
    }
}

#[test]
fn bad_specs_name_the_key_and_exit_2() {
    for (spec, needle) in [
        ("sim:demo,au_sise=4M", "unknown key 'au_sise'"),
        ("sim:demo,au_size=20k", "au_size"),
        ("sim:demo,open_aus_linear=0", "open_aus_linear"),
        ("sim:demo,capacity=1000", "capacity"),
        ("sim:nosuch", "unknown profile 'nosuch'"),
        ("sim:demo,host=nosuch", "unknown host preset"),
        ("sim:/nonexistent/card.toml", "/nonexistent/card.toml"),
        ("sim:demo,jitter=abc", "jitter"),
    ] {
        let out = flashlab()
            .args(["info", spec, "--json"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle).and(predicate::str::contains("hint:")));
        let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).expect("one JSON document");
        assert!(v["error"]["message"].as_str().unwrap().contains(needle), "{spec}: {v}");
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "capacity = [1, 2\n").unwrap();
    flashlab()
        .args(["info", &format!("sim:{}", bad.display())])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.toml"));
}

#[test]
fn reproduce_prints_every_cell_with_its_error_as_json() {
    let v = json(&["sim", "reproduce", "at91"]);
    assert_eq!(v["command"], "sim reproduce");
    assert_eq!(v["experiment"], "at91");
    let rows = v["rows"].as_array().unwrap();
    // 8 configurations x read/write, two interrupt counts and their ratio.
    assert_eq!(rows.len(), 19);
    let mut max: f64 = 0.0;
    for r in rows {
        let (p, s, e) = (
            r["published"].as_f64().unwrap(),
            r["simulated"].as_f64().unwrap(),
            r["error_pct"].as_f64().unwrap(),
        );
        assert!(((s - p) / p * 100.0 - e).abs() < 0.1, "{r}");
        max = max.max(e.abs());
        for k in ["label", "metric", "unit"] {
            assert!(r[k].is_string(), "{r}");
        }
    }
    assert_eq!(v["max_abs_error_pct"].as_f64().unwrap(), max);
    let all = json(&["sim", "reproduce", "all"]);
    assert_eq!(all["experiments"].as_array().unwrap().len(), 4);
    flashlab()
        .args(["sim", "reproduce", "nope"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty());
}

/// A near miss names what was meant; bad ids and empty filters say what
/// is there.
#[test]
fn near_misses_name_what_was_meant() {
    let err = |args: &[&str]| {
        let out = flashlab().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(err(&["info", "sim:kingston"]).contains("did you mean 'kingston-sa04g'?"));
    assert!(err(&["info", "sim:demo,open_aus=3"]).contains("'open_aus_linear' or 'open_aus_random'"));
    assert!(err(&["info", "sim:demo,au_size=4194000"]).contains("4194000 bytes (~4.00 MiB)"));
    let bad_id = err(&["results", "show", "abc"]);
    assert!(
        bad_id.contains("not a run id") && bad_id.contains("`flashlab results show --help`"),
        "{bad_id}"
    );
    flashlab().arg("info").assert().success();
    flashlab()
        .args(["results", "list", "--device", "nothing"])
        .assert()
        .success()
        .stdout(predicate::str::contains("containing 'nothing'"));
}

/// Every reproduction reads as a table at 80 columns: no line wider, and
/// each published cell one line of its own (a first column of conditions
/// had broken "single-sector read (32 sectors)" over three or four lines
/// a row); the conditions stand as heading rows over the cells they share.
#[test]
fn reproductions_are_tables_of_one_line_a_cell_at_80_columns() {
    let all = json(&["sim", "reproduce", "all"]);
    let out = flashlab()
        .args(["sim", "reproduce", "all"])
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
    let cells = |line: &str| -> Vec<String> {
        line.trim_matches('│')
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let experiments = all["experiments"].as_array().unwrap();
    let names: Vec<&str> = experiments.iter().map(|e| e["experiment"].as_str().unwrap()).collect();
    assert_eq!(names, ["at91", "hsq", "cf", "flashbench"]);
    for e in experiments {
        let name = e["experiment"].as_str().unwrap();
        let rows = e["rows"].as_array().unwrap();
        let labels: Vec<&str> = rows.iter().map(|r| r["label"].as_str().unwrap()).collect();
        let block: Vec<&str> = text
            .split(&format!("== {name}\n"))
            .nth(1)
            .unwrap()
            .lines()
            .skip_while(|l| !l.starts_with('╞'))
            .skip(1)
            .take_while(|l| l.starts_with('│'))
            .collect();
        let (mut data, mut headings, mut after_heading) = (0, 0, false);
        for line in &block {
            let c = cells(line);
            if c.last().is_some_and(|x| x.ends_with('%')) {
                assert_eq!(c.len(), 5, "{name}: {line:?}");
                data += 1;
                after_heading = false;
            } else {
                // A heading: some row's conditions up to its last ", ",
                // alone on its line, never two in a row (a wrapped one).
                let head = c.join(" ");
                assert!(
                    labels.iter().any(|l| *l == head || l.starts_with(&format!("{head}, "))),
                    "{name}: {line:?} is neither a cell nor a heading"
                );
                assert!(!after_heading, "{name}: {line:?} continues a heading");
                headings += 1;
                after_heading = true;
            }
        }
        assert_eq!(data, rows.len(), "{name}: one line a cell");
        assert!(
            headings > 0 && headings < rows.len().max(2),
            "{name}: {headings} headings"
        );
    }
    let cf: Vec<Vec<String>> = text
        .split("== cf\n")
        .nth(1)
        .unwrap()
        .lines()
        .take(7)
        .map(cells)
        .collect();
    assert_eq!(cf[1], ["what", "unit", "published", "simulated", "error"]);
    assert_eq!(cf[3], ["single-sector read"]);
    assert_eq!(cf[4], ["first sector (command to data)", "us", "1550", "1591", "+2.6%"]);
    assert_eq!(cf[5], ["total per sector", "us", "570", "570.04", "+0.0%"]);
    assert_eq!(cf[6], ["multi-sector read (32 sectors)"]);
}
