//! align, open-au, fat and scatter through the binary: JSON contract on
//! simulated cards, refusals, and a preserving open-au on a loop device.

use predicates::prelude::*;

use crate::support::{LoopDevice, flashlab, json, random_file, require_loop_devices};

#[test]
fn align_open_au_fat_on_kingston_give_its_geometry() {
    let a = json(&["align", "sim:kingston-sa04g"]);
    assert_eq!(a["command"], "align");
    assert_eq!(a["align"]["erase_size_bytes"], 4 << 20);
    assert_eq!(a["align"]["page_size_bytes"], 16 << 10);
    assert!(a["align"]["confidence"].as_f64().unwrap() > 0.99);
    assert!(a["device_time_s"].as_f64().unwrap() <= 30.0);
    let rows = a["align"]["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["boundary_bytes"] == 3 << 20), "3x2^n boundaries");
    let o = json(&["open-au", "sim:kingston-sa04g"]);
    assert_eq!(o["open_au"]["linear"]["max_open_aus"], 3);
    assert_eq!(o["open_au"]["random"]["max_open_aus"], 3);
    assert!(o["device_time_s"].as_f64().unwrap() <= 180.0);
    let runs = o["open_au"]["linear"]["runs"].as_array().unwrap();
    assert!(runs.iter().any(|r| r["aborted"] == true && r["open_aus"] == 4));
    let f = json(&["fat"]);
    assert_eq!(f["fat"]["fat_area_aus"], 2, "sim:demo has a 2-AU FAT area");
    assert_eq!(f["fat"]["erase_size_bytes"], 4 << 20);
}

#[test]
fn scatter_csv_has_every_block_and_bad_input_exits_2() {
    let out = flashlab()
        .args(["scatter", "--length", "1M", "--csv"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 257);
    assert!(text.starts_with("offset_bytes,latency_ns\n0,"));
    flashlab()
        .args(["scatter", "--offset", "1000"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("logical block"));
    flashlab()
        .args(["open-au", "sim:demo,capacity=1G", "--max", "200"])
        .assert()
        .code(2)
        // A pool of 2 x max AUs from 32 MiB: (1 GiB - 32 MiB) / 4 MiB / 2.
        .stderr(predicate::str::contains("never wrap").and(predicate::str::contains("largest --max that fits is 124")));
    // Without --max, a small card gets the largest sweep that fits.
    let o = json(&["open-au", "sim:demo,capacity=1G", "--linear"]);
    assert_eq!(o["open_au"]["linear"]["max_open_aus"], 6);
    flashlab().args(["fat", "--erase-size", "4Q"]).assert().code(2);
}

/// A sweep small enough for an 80 MiB loop device: 1 MiB AUs, up to 2 open.
fn small_open_au(dev: &str) -> [&str; 8] {
    ["open-au", dev, "--erase-size", "1M", "--chunk", "64K", "--max", "2"]
}

#[test]
fn open_au_on_a_loop_device_needs_consent_and_gives_every_byte_back() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 80 << 20, 23);
    let dev = LoopDevice::attach(&f, None);
    let sha = || crate::support::sha(&dev.path);
    let before = sha();
    let args = small_open_au(dev.as_str());
    flashlab()
        .args(args)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--write"));
    assert_eq!(sha(), before);
    let jdir = dir.path().join("j");
    let out = flashlab()
        .args(args)
        .args(["--write", "--journal-dir"])
        .arg(&jdir)
        .arg("--json")
        .output()
        .unwrap();
    let v = crate::support::document(&out, 0, &format!("{args:?}"));
    assert_eq!(v["open_au"]["erase_size_bytes"], 1 << 20);
    assert_eq!(v["target"]["kind"], "block");
    assert_eq!(sha(), before, "open-au restored every byte");
}

#[test]
fn ctrl_c_during_open_au_on_a_loop_device_restores_and_exits_130() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 80 << 20, 29);
    let dev = LoopDevice::attach(&f, None);
    let sha = || crate::support::sha(&dev.path);
    let before = sha();
    let jdir = dir.path().join("j");
    // Each region is journalled (a record, the commit: records synced, the
    // second slot) just before its first write: steps 1-5 are the one-AU
    // run (3 journal steps, 2 writes), 6-10 add the second AU; the signal at
    // 9 stops a device write. open-au writes each chunk with the bytes it
    // held, so nothing needs writing back, but every journalled byte is
    // read back and checked.
    let out = flashlab()
        .args(small_open_au(dev.as_str()))
        .args(["--write", "--journal-dir"])
        .arg(&jdir)
        .env("FLASHLAB_SIGINT_AT", "9")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupt point 9: device write"), "{err}");
    assert!(
        err.contains("put the saved data back (0 B rewritten) and read all 2 MiB back the same"),
        "{err}"
    );
    assert!(err.contains("original data is back"), "{err}");
    assert_eq!(sha(), before, "every byte restored");
    let left = std::fs::read_dir(&jdir).map_or(0, |d| d.count());
    assert_eq!(left, 0, "the journal is deleted after the restore");
}
