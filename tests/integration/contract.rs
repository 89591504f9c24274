//! The JSON contract is a stable interface: every key a command's `--json`
//! document has carried stays. Each command runs on the built-in profiles and
//! the union of its key paths must hold every path in `json_keys/COMMAND.txt`,
//! recorded from the binary before the run document replaced the hand-built
//! envelopes. New keys are welcome; a missing one fails with its name.
//! `FLASHLAB_BLESS_JSON_KEYS=1` rewrites the files (only when adding keys).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::support::json;

/// Every key path of a document: `a.b` for objects, `a[]` for array items.
fn paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(p.clone());
                paths(v, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for v in a {
                paths(v, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn keys_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/integration/json_keys")
        .join(format!("{name}.txt"))
}

/// The union of the key paths of each run's document, checked against the
/// recorded file.
fn check(name: &str, runs: &[Vec<&str>]) {
    let docs: Vec<serde_json::Value> = runs.iter().map(|args| json(args)).collect();
    check_docs(name, &docs);
}

/// The same for documents already run (failures, runs needing a store).
fn check_docs(name: &str, docs: &[serde_json::Value]) {
    let mut got = BTreeSet::new();
    for d in docs {
        paths(d, "", &mut got);
    }
    let file = keys_file(name);
    if std::env::var_os("FLASHLAB_BLESS_JSON_KEYS").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let text: String = got.iter().map(|p| format!("{p}\n")).collect();
        std::fs::write(&file, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let missing: Vec<&str> = want.lines().filter(|p| !got.contains(*p)).collect();
    assert!(missing.is_empty(), "{name}: keys gone from --json: {missing:?}");
    assert!(
        want.lines().count() >= 3,
        "{name}: too few keys recorded to mean anything"
    );
}

const PROFILES: [&str; 9] = [
    "sim:demo",
    "sim:kingston-sa04g",
    "sim:sandisk-512mb",
    "sim:sandisk-2gb",
    "sim:toshiba-7au",
    "sim:sandisk-20au",
    "sim:emmc-hs400",
    "sim:cf-sandisk-ultra2",
    "sim:cf-simpletech-oem",
];

/// A card whose align reads are unsure (confidence 0.31 at this build).
const NOISY_READS: &str = "sim:demo,host=at91-mci,max_blocks_per_cmd=64,jitter=0.25,sector_size=4096";

#[test]
fn probe_keeps_every_key_on_every_built_in_profile() {
    let mut runs: Vec<Vec<&str>> = PROFILES.iter().map(|p| vec!["probe", p]).collect();
    // probe runs au only where align's reads are unsure: noisy
    // reads behind a slow host make them so, and au's keys must still be
    // there when it runs.
    runs.push(vec!["probe", NOISY_READS]);
    check("probe", &runs);
}

#[test]
fn each_test_command_keeps_every_key() {
    // A regular file too: its documents have keys a simulated card lacks.
    let dir = tempfile::tempdir().unwrap();
    let file = crate::support::random_file(dir.path(), "t.img", 32 << 20, 5);
    let file = file.to_str().unwrap();
    let each =
        |cmd: &'static str| -> Vec<Vec<&str>> { PROFILES.iter().chain([&file]).map(|p| vec![cmd, *p]).collect() };
    check("info", &each("info"));
    check("align", &each("align"));
    check("scatter", &each("scatter"));
    check(
        "open-au",
        &[
            vec!["open-au", "sim:demo"],
            vec!["open-au", "sim:kingston-sa04g", "--full", "--max", "4"],
        ],
    );
    check("fat", &[vec!["fat", "sim:demo"], vec!["fat", "sim:kingston-sa04g"]]);
    check("au", &[vec!["au", "sim:demo"], vec!["au", "sim:kingston-sa04g"]]);
    check("page", &[vec!["page", "sim:demo"], vec!["page", "sim:kingston-sa04g"]]);
    check(
        "blocksize",
        &[vec!["blocksize", "sim:demo"], vec!["blocksize", "sim:kingston-sa04g"]],
    );
    check(
        "bench",
        &[
            vec!["bench", "sim:demo"],
            vec![
                "bench", "sim:demo", "--rw", "randrw", "--bs", "4k,64k", "--qd", "1,4", "--size", "1M",
            ],
            vec!["bench", file, "--write", "--rw", "randwrite", "--size", "1M"],
        ],
    );
    check(
        "capacity",
        &[
            vec!["capacity", "sim:demo"],
            vec!["capacity", "sim:demo,capacity=1G,real_capacity=200M,fake_mode=wrap"],
            vec![
                "capacity",
                "sim:demo,capacity=1G,real_capacity=200M,fake_mode=drop-zeros",
            ],
            vec!["capacity", "sim:demo,capacity=1G,bad_ranges=512M+1M"],
            vec!["capacity", file, "--write", "--push", "4M"],
        ],
    );
    check(
        "probe-file",
        &[
            vec!["probe", file],
            vec!["probe", file, "--write", "--erase-size", "1M"],
        ],
    );
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/flashbench");
    let kingston = fixtures.join("004_kingston_sa04g_blog.txt");
    let toshiba = fixtures.join("46_lakml2011_mmc_quirks_toshiba_emmc_motorola.txt");
    check(
        "import-flashbench",
        &[
            vec!["import", "flashbench", kingston.to_str().unwrap(), "--no-store"],
            vec!["import", "flashbench", toshiba.to_str().unwrap(), "--no-store"],
        ],
    );
}

/// A failing command's one document: `error` beside what completed.
fn failure(args: &[&str]) -> serde_json::Value {
    let out = crate::support::flashlab().args(args).arg("--json").output().unwrap();
    assert!(!out.status.success(), "{args:?} was to fail");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn error_documents_keep_every_key() {
    check_docs(
        "error",
        &[
            failure(&["align", "/nonexistent/device"]),
            failure(&["bench", "sim:demo", "--bs", "3"]),
            failure(&["probe", "--no-such-flag"]),
            failure(&["open-au", "sim:demo", "--erase-size", "5000"]),
        ],
    );
}

/// `life`'s keys are the contract its issue set (`life.trace`, `.waf`,
/// `.by_cause`, `.years`, ...), recorded by hand from it.
/// Written by hand from the contract's list (`batch` {`id`, `rows` [...]}).
#[test]
fn batch_keeps_every_key() {
    check(
        "batch",
        &[vec![
            "batch",
            "sim:demo",
            "sim:demo,capacity=1G,real_capacity=256M,fake_mode=wrap",
            "--runtime",
            "1s",
            "--no-store",
        ]],
    );
}

#[test]
fn life_keeps_every_key() {
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trace/randw.blktrace.0.zst");
    let t = trace.to_str().unwrap();
    check(
        "life",
        &[vec![
            "life",
            t,
            "--card",
            "sim:kingston-sa04g",
            "--coalesce",
            "1s",
            "--no-store",
        ]],
    );
}

#[test]
fn results_report_and_restore_keep_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db = db.to_str().unwrap();
    let run = |args: &[&str]| -> serde_json::Value {
        let mut a = args.to_vec();
        a.extend(["--db", db]);
        json(&a)
    };
    // Noisy reads, so probe runs au too (see the probe contract above).
    run(&["probe", NOISY_READS]);
    run(&["probe", "sim:kingston-sa04g", "--label", "K1"]);
    check_docs(
        "results-list",
        &[run(&["results", "list"]), run(&["results", "list", "--label", "k1"])],
    );
    check_docs(
        "results-show",
        &[run(&["results", "show", "1"]), run(&["results", "show", "2"])],
    );
    check_docs("results-compare", &[run(&["results", "compare", "1", "2"])]);
    let exported = dir.path().join("run.json");
    let out = crate::support::flashlab()
        .args(["results", "export", "1", "--db", db])
        .output()
        .unwrap();
    std::fs::write(&exported, out.stdout).unwrap();
    check_docs(
        "results-import",
        &[run(&["results", "import", exported.to_str().unwrap()])],
    );
    let html = dir.path().join("r.html");
    check_docs("report", &[run(&["report", "1", "2", "-o", html.to_str().unwrap()])]);
    // restore of a crashed run, and the pattern run itself.
    let f = crate::support::random_file(dir.path(), "t.img", 16 << 20, 6);
    let jdir = dir.path().join("j");
    let (f, jdir_s) = (f.to_str().unwrap(), jdir.to_str().unwrap());
    check_docs(
        "debug-write-pattern",
        &[json(&[
            "debug",
            "write-pattern",
            f,
            "--range",
            "1M+1M",
            "--write",
            "--journal-dir",
            jdir_s,
        ])],
    );
    let out = crate::support::flashlab()
        .args([
            "debug",
            "write-pattern",
            f,
            "--range",
            "1M+1M",
            "--write",
            "--journal-dir",
            jdir_s,
        ])
        .env("FLASHLAB_CRASH_AT", "4")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed");
    check_docs("restore", &[json(&["restore", f, "--journal-dir", jdir_s])]);
}

#[test]
fn sim_decode_and_restore_keep_every_key() {
    check("sim-list", &[vec!["sim", "list"]]);
    check(
        "sim-show",
        &PROFILES
            .iter()
            .map(|p| vec!["sim", "show", p.strip_prefix("sim:").unwrap()])
            .collect::<Vec<_>>(),
    );
    check(
        "sim-reproduce",
        &[vec!["sim", "reproduce", "at91"], vec!["sim", "reproduce", "cf"]],
    );
    check(
        "decode",
        &[
            vec!["decode", "cid", "02544d5341303447113533890900d371"],
            vec!["decode", "csd", "400e00325b5900001d177f800a40008d"],
            vec!["decode", "scr", "0235800001000000"],
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().to_str().unwrap();
    // The listing covers every pending journal on the machine (the
    // register): another test's damaged journal makes it exit 1, with the
    // same document.
    let out = crate::support::flashlab()
        .args(["restore", "--journal-dir", jdir, "--json"])
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    check_docs("restore-list", &[listed]);
}
