//! `batch` through real block devices at once: emulated cards (a wrap
//! fake, a drop fake, a slow card, two genuine ones) and loop devices over
//! files. The rows are right and bound to the right device, every byte is
//! kept, the fakes FAIL with their exact usable sizes, the slow card is
//! SUSPECT, and the loop devices (one bus: their files' filesystem) had
//! their speeds taken one at a time.

use std::path::Path;

use super::{Emu, cannot_emulate, flashlab_in, timed};
use crate::support::{LoopDevice, require_loop_devices, sha};

/// (spec, time scale, expected verdict, usable bytes): the emulated cards,
/// faster than real time (only verdicts and bytes are judged). The slow
/// card (an AT91 host, about 1.5 MB/s of writes) runs 100 times faster and
/// is still 5 times slower than the others at 10 times.
const CARDS: [(&str, &str, &str, u64); 5] = [
    (
        "sim:demo,capacity=256M,real_capacity=64M,fake_mode=wrap",
        "0.1",
        "FAIL",
        64 << 20,
    ),
    (
        "sim:demo,capacity=256M,real_capacity=96M,fake_mode=drop-zeros",
        "0.1",
        "FAIL",
        96 << 20,
    ),
    ("sim:demo,capacity=96M,host=at91-mci", "0.01", "SUSPECT", 96 << 20),
    ("sim:demo,capacity=128M", "0.1", "PASS", 128 << 20),
    ("sim:demo,capacity=128M,au_size=2M", "0.1", "PASS", 128 << 20),
];

#[test]
fn eight_devices_at_once_give_right_rows_and_keep_every_byte() {
    require_emulation!();
    let _one = timed();
    let dir = tempfile::tempdir().unwrap();
    let emus: Vec<Emu> = CARDS
        .iter()
        .map(|(spec, scale, _, _)| Emu::start(dir.path(), spec, &["--time-scale", scale]))
        .collect();
    let files: Vec<_> = (0..3)
        .map(|i| crate::support::random_file(dir.path(), &format!("stick{i}.img"), 64 << 20, 40 + i))
        .collect();
    let loops: Vec<LoopDevice> = files.iter().map(|f| LoopDevice::attach(f, None)).collect();
    let devices: Vec<String> = emus
        .iter()
        .map(|e| e.device.clone())
        .chain(loops.iter().map(|l| l.as_str().to_string()))
        .collect();
    let before: Vec<Vec<u8>> = devices.iter().map(|d| sha(Path::new(d))).collect();
    let labels = dir.path().join("labels.txt");
    let names: String = devices
        .iter()
        .enumerate()
        .map(|(i, d)| format!("{d} shelf-{i}\n"))
        .collect();
    std::fs::write(&labels, format!("# station 1\n{names}")).unwrap();
    let db = dir.path().join("runs.sqlite");
    let out = flashlab_in(dir.path())
        .arg("batch")
        .args(&devices)
        .args(["--write", "--runtime", "1s", "--json", "--labels"])
        .arg(&labels)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let v = crate::support::document(&out, 0, "batch");
    let rows = v["batch"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    for (i, (row, dev)) in rows.iter().zip(&devices).enumerate() {
        assert_eq!(row["device"], dev.as_str(), "row {i} is bound to its device");
        assert_eq!(row["label"], format!("shelf-{i}"), "{row}");
        assert!(row["run_id"].as_i64().is_some(), "{row}");
    }
    for (i, (_, _, verdict, usable)) in CARDS.iter().enumerate() {
        let r = &rows[i];
        assert_eq!(
            (r["verdict"].as_str(), r["usable_bytes"].as_u64()),
            (Some(*verdict), Some(*usable)),
            "{}: {}",
            CARDS[i].0,
            r["why"]
        );
    }
    assert_eq!(rows[0]["fake_kind"], "wrap");
    assert_eq!(rows[1]["fake_kind"], "drop");
    let loop_bus = rows[5]["bus"].as_str().unwrap();
    for r in &rows[5..] {
        assert_eq!(r["verdict"], "PASS", "{}", r["why"]);
        assert_eq!(r["usable_bytes"], 64u64 << 20);
        assert_eq!(r["bus"], loop_bus, "files of one filesystem share its bus");
        let beside: Vec<&str> = r["beside"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b.as_str())
            .collect();
        assert!(
            beside.iter().all(|b| !b.ends_with(&format!(", {loop_bus})"))),
            "nothing on its bus ran beside its speed test: {beside:?}"
        );
    }
    // Every emulated card is served by this machine's CPUs: one bus, so
    // their speed tests ran one at a time.
    for r in &rows[..5] {
        assert_eq!(r["bus"], "emulated on this host", "{r}");
        let beside: Vec<&str> = r["beside"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b.as_str())
            .collect();
        assert!(
            beside.iter().all(|b| !b.ends_with(", emulated on this host)")),
            "no emulated card's test ran beside its speed test: {beside:?}"
        );
    }
    for (d, b) in devices.iter().zip(&before) {
        assert_eq!(&sha(Path::new(d)), b, "{d} keeps every byte");
    }
    let id = v["batch"]["id"].as_str().unwrap();
    let listed = flashlab_in(dir.path())
        .args(["results", "list", "--json", "--batch", id, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let l: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(l["runs"].as_array().map(Vec::len), Some(8), "{l}");
    drop(loops);
    drop(emus);
}

/// A card pulled out of its reader mid-test (the emulation's SIGUSR1: the
/// disk shows 0 bytes and its I/O fails, as a USB reader's does) is
/// "removed", its journal waits, and when the same card is back in its slot
/// (SIGUSR2) the next batch puts its data back before testing it: every
/// byte as it was. The other device of the batch goes on untouched.
#[test]
fn a_card_pulled_mid_test_is_removed_and_restored_when_it_returns() {
    require_emulation!();
    let _one = timed();
    let dir = tempfile::tempdir().unwrap();
    let mut emu = Emu::start(dir.path(), "sim:demo,capacity=128M", &["--time-scale", "0.5"]);
    let file = crate::support::random_file(dir.path(), "stick.img", 64 << 20, 7);
    let other = LoopDevice::attach(&file, None);
    let card = Path::new(&emu.device).to_path_buf();
    let before = (sha(&card), sha(Path::new(other.as_str())));
    let journals = dir.path().join("journals");
    std::fs::create_dir_all(&journals).unwrap();
    let batch = |devices: &[&str]| {
        let mut c = flashlab_in(dir.path());
        c.arg("batch")
            .args(devices)
            .args([
                "--write",
                "--tests",
                "capacity",
                "--json",
                "--no-store",
                "--journal-dir",
            ])
            .arg(&journals);
        c
    };
    let child = batch(&[&emu.device, other.as_str()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let held = |min: u64| journal_over(&journals, min);
    // The card's own journal, not the other device's: a card pulled before
    // it wrote has nothing to put back.
    wait_for_card_journal(dir.path(), &journals, &emu.device);
    emu.signal(libc::SIGUSR1);
    let out = child.wait_with_output().unwrap();
    let v = crate::support::document(&out, 0, "batch");
    let err = String::from_utf8_lossy(&out.stderr);
    let rows = v["batch"]["rows"].as_array().unwrap();
    assert_eq!(rows[0]["verdict"], "removed", "{}\n{err}", rows[0]["why"]);
    assert!(
        rows[0]["why"].as_str().unwrap().contains("its journal waits"),
        "{}",
        rows[0]["why"]
    );
    assert_eq!(rows[1]["verdict"], "PASS", "{}", rows[1]["why"]);
    assert!(held(0), "the pulled card's journal waits");
    assert_eq!(
        sha(Path::new(other.as_str())),
        before.1,
        "the other device keeps every byte"
    );

    emu.signal(libc::SIGUSR2);
    let again = batch(&[&emu.device]).output().unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let row = &v["batch"]["rows"][0];
    assert_eq!(row["verdict"], "PASS", "{}\n{err}", row["why"]);
    let restored = row["restored"].as_str().unwrap_or_default();
    assert!(restored.contains("put back and verified first"), "{row}");
    assert_eq!(sha(&card), before.0, "the card has every byte back");
    assert!(!held(0), "no journal is left");
    drop(other);
    assert!(emu.stop().contains("stopped by SIGTERM"));
}

/// `batch --watch` as a station: the card in the slot is tested at once;
/// pulled and put back, it is tested again; pulled mid-test, its row is
/// "removed"; put back, its data comes back first and it passes. SIGTERM
/// ends the station with one table of the three tests, exit 0.
#[test]
fn a_station_tests_each_card_as_it_is_put_in() {
    require_emulation!();
    let _one = timed();
    let dir = tempfile::tempdir().unwrap();
    let mut emu = Emu::start(dir.path(), "sim:demo,capacity=128M", &["--time-scale", "0.5"]);
    let card = Path::new(&emu.device).to_path_buf();
    let before = sha(&card);
    let journals = dir.path().join("journals");
    std::fs::create_dir_all(&journals).unwrap();
    let mut station = flashlab_in(dir.path())
        .args(["batch", "--watch", &emu.device])
        .args([
            "--write",
            "--tests",
            "capacity",
            "--json",
            "--no-store",
            "--journal-dir",
        ])
        .arg(&journals)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = crate::support::lines_of(station.stderr.take().unwrap());
    let wait_for = |what: &str| crate::support::wait_for_line(&lines, what, std::time::Duration::from_secs(60));
    wait_for("loop");
    wait_for(": PASS: genuine 128 MiB");
    emu.signal(libc::SIGUSR1);
    wait_for("the card is out");
    emu.signal(libc::SIGUSR2);
    wait_for("testing it (card 2)");
    wait_for_journal_data(&journals);
    emu.signal(libc::SIGUSR1);
    wait_for(": removed: it went away mid-test");
    emu.signal(libc::SIGUSR2);
    wait_for("testing it (card 3)");
    wait_for(": PASS: genuine 128 MiB");
    // SAFETY: kill(2) on our own child's pid, which has not been reaped.
    unsafe { libc::kill(station.id() as i32, libc::SIGTERM) };
    let out = station.wait_with_output().unwrap();
    let v = crate::support::document(&out, 0, "a station ends cleanly between tests");
    let rows = v["batch"]["rows"].as_array().unwrap();
    let verdicts: Vec<&str> = rows.iter().filter_map(|r| r["verdict"].as_str()).collect();
    assert_eq!(verdicts, ["PASS", "removed", "PASS"], "{v}");
    assert!(
        rows[2]["restored"].as_str().is_some_and(|r| r.contains("put back")),
        "{}",
        rows[2]
    );
    assert!(rows.iter().all(|r| r["device"] == emu.device.as_str()));
    assert_eq!(sha(&card), before, "the card has every byte back");
    assert!(emu.stop().contains("stopped by SIGTERM"));
}

/// `--destructive`: every block of each device written and read back
/// first. A wrapping fake's blocks past its real flash come back from
/// other addresses, counted to the byte; a genuine card reads back whole.
/// No journal is kept (the flag is that consent).
#[test]
fn destructive_writes_and_verifies_every_block() {
    require_emulation!();
    let _one = timed();
    let dir = tempfile::tempdir().unwrap();
    let fake = Emu::start(
        dir.path(),
        "sim:demo,capacity=256M,real_capacity=64M,fake_mode=wrap",
        &["--time-scale", "0.1"],
    );
    let genuine = Emu::start(dir.path(), "sim:demo,capacity=128M", &["--time-scale", "0.1"]);
    let journals = dir.path().join("journals");
    let out = flashlab_in(dir.path())
        .args([
            "batch",
            &fake.device,
            &genuine.device,
            "--destructive",
            "--runtime",
            "1s",
        ])
        .args(["--json", "--no-store", "--journal-dir"])
        .arg(&journals)
        .output()
        .unwrap();
    let v = crate::support::document(&out, 0, "batch");
    let err = String::from_utf8_lossy(&out.stderr);
    let rows = v["batch"]["rows"].as_array().unwrap();
    let f = &rows[0]["fill"];
    assert_eq!(rows[0]["verdict"], "FAIL", "{}", rows[0]["why"]);
    assert!(
        rows[0]["why"].as_str().unwrap().contains("did not read back"),
        "{}",
        rows[0]["why"]
    );
    assert_eq!(
        (
            f["good_bytes"].as_u64(),
            f["foreign_bytes"].as_u64(),
            f["complete"].as_bool()
        ),
        (Some(64 << 20), Some(192 << 20), Some(true)),
        "{f}"
    );
    let g = &rows[1]["fill"];
    assert_eq!(rows[1]["verdict"], "PASS", "{}", rows[1]["why"]);
    assert_eq!(
        (g["good_bytes"].as_u64(), g["verified_bytes"].as_u64()),
        (Some(128 << 20), Some(128 << 20))
    );
    assert!(g["write_mb_s"].as_f64().is_some_and(|w| w > 0.0));
    let kept = std::fs::read_dir(&journals).map(|d| d.count()).unwrap_or(0);
    assert_eq!(kept, 0, "nothing journalled");
    assert!(err.contains("no journal"), "the run says its data goes: {err}");
}

/// Whether a journal in `dir` holds more than `min` bytes.
fn journal_over(dir: &Path, min: u64) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| e.metadata().is_ok_and(|m| m.len() > min))
}

/// Wait (a minute at most) until a journal in `dir` holds a MiB: the
/// test has written by then, so a card pulled now leaves data to restore.
/// Wait (a minute at most) until the journal of `device` in `journals`
/// holds a MiB, as `flashlab restore` lists it (the batch's other device
/// journals into the same directory).
fn wait_for_card_journal(dir: &Path, journals: &Path, device: &str) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < until {
        let out = flashlab_in(dir)
            .args(["restore", "--json", "--journal-dir"])
            .arg(journals)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let held = v["pending"].as_array().is_some_and(|p| {
            p.iter()
                .any(|j| j["target"] == device && j["bytes"].as_u64().is_some_and(|b| b >= 1 << 20))
        });
        if held {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn wait_for_journal_data(dir: &Path) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !journal_over(dir, 1 << 20) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A wrapping fake smaller than bench's 64 MiB area: once capacity has
/// found it, batch's and probe's bench write within its real 32 MiB alone.
/// Over the whole card its area met itself through the wrap, and a write
/// journalled after another had landed on the same bytes kept that write's
/// bytes as an original, which the restore put back; bench alone now sees
/// that and stops.
#[test]
fn a_wrapping_fake_smaller_than_the_bench_area_keeps_every_byte() {
    require_emulation!();
    let _one = timed();
    let dir = tempfile::tempdir().unwrap();
    let emu = Emu::start(
        dir.path(),
        "sim:demo,capacity=256M,real_capacity=32M,fake_mode=wrap",
        &["--time-scale", "0.1"],
    );
    let device = Path::new(&emu.device);
    let before = sha(device);
    let out = flashlab_in(dir.path())
        .args(["batch", &emu.device, "--write", "--runtime", "1s", "--json", "--db"])
        .arg(dir.path().join("runs.sqlite"))
        .output()
        .unwrap();
    let v = crate::support::document(&out, 0, "batch");
    let row = &v["batch"]["rows"][0];
    assert_eq!(
        (row["verdict"].as_str(), row["usable_bytes"].as_u64()),
        (Some("FAIL"), Some(32 << 20)),
        "{row}"
    );
    assert_eq!(sha(device), before, "batch keeps every byte");
    let out = flashlab_in(dir.path())
        .args(["probe", &emu.device, "--write", "--json", "--no-store"])
        .output()
        .unwrap();
    let v = crate::support::document(&out, 0, "probe");
    assert_eq!(
        (
            v["capacity"]["verdict"].as_str(),
            v["capacity"]["usable_bytes"].as_u64()
        ),
        (Some("fake"), Some(32 << 20)),
        "{}",
        v["capacity"]
    );
    let tests = v["bench"]["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 4, "probe's bench ran its four tests: {}", v["bench"]);
    assert_eq!(sha(device), before, "probe keeps every byte");
    // bench alone, over the whole card: its sequential write comes round
    // to bytes it wrote 32 MiB before, and stops there.
    let out = flashlab_in(dir.path())
        .args(["bench", &emu.device, "--write", "--no-store"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: the bytes at 167772160 are those at 134217728: a block written at 134217728")
            && stderr.contains("hint: what was written is put back; `flashlab capacity TARGET --write`"),
        "{stderr}"
    );
    assert_eq!(sha(device), before, "bench alone keeps every byte");
}
