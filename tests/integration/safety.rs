//! The data-safety write path through the binary: consent, refusals, the
//! preservation journal on loop devices, signals, and crash (SIGKILL) injection
//! followed by `flashlab restore`.

use std::path::Path;
use std::process::Command;

use assert_cmd::assert::OutputAssertExt;
use predicates::prelude::*;
use sha2::{Digest, Sha256};

use crate::support::{LoopDevice, Mounted, flashlab, random_file, require_loop_devices};

fn sha(path: &Path) -> Vec<u8> {
    Sha256::digest(std::fs::read(path).expect("read target")).to_vec()
}

fn journals(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Put `bytes` back on a device (between trials).
fn reset(dev: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
}

const RANGES: [&str; 4] = ["--range", "1M+2M", "--range", "9M+1M"];

/// `flashlab debug write-pattern DEV --write --journal-dir JDIR EXTRA... RANGES`:
/// the preserving writer every loop-device test drives.
fn write_pattern(dev: &str, jdir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashlab"));
    c.args(["debug", "write-pattern", dev, "--write", "--journal-dir"])
        .arg(jdir)
        .args(extra)
        .args(RANGES);
    c
}

#[test]
fn writing_a_real_target_needs_consent_and_names_the_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 11);
    let before = sha(&f);
    flashlab()
        .args(["debug", "write-pattern", f.to_str().unwrap()])
        .args(RANGES)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bytes 1048576..3145728").and(predicate::str::contains("--write")));
    // A range past the end is refused, never wrapped.
    flashlab()
        .args([
            "debug",
            "write-pattern",
            f.to_str().unwrap(),
            "--range",
            "15M+2M",
            "--write",
        ])
        .arg("--journal-dir")
        .arg(dir.path().join("j"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("past the end"));
    // A journal directory that cannot be written is refused before any write.
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::write(ro.join("file"), b"x").unwrap();
    flashlab()
        .args([
            "debug",
            "write-pattern",
            f.to_str().unwrap(),
            "--write",
            "--journal-dir",
        ])
        .arg(ro.join("file").join("sub"))
        .args(RANGES)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("journal directory"));
    assert_eq!(sha(&f), before, "nothing written by any refusal");
    // Simulated cards need no consent.
    flashlab()
        .args(["debug", "write-pattern", "sim:demo"])
        .args(RANGES)
        .assert()
        .success();
}

#[test]
fn no_preserve_says_what_it_destroys() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 12);
    let before = sha(&f);
    flashlab()
        .args([
            "debug",
            "write-pattern",
            f.to_str().unwrap(),
            "--write",
            "--no-preserve",
        ])
        .args(RANGES)
        .assert()
        .success()
        .stderr(predicate::str::contains("3145728 bytes").and(predicate::str::contains("destroyed")));
    assert_ne!(sha(&f), before);
}

#[test]
fn preserving_write_on_a_loop_device_gives_back_every_byte() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 13);
    let dev = LoopDevice::attach(&f, None);
    let before = sha(&dev.path);
    let jdir = dir.path().join("journals");
    let out = write_pattern(dev.as_str(), &jdir, &["--json", "--passes", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"]["bytes_written"], 2 * 3 * (1 << 20));
    assert_eq!(v["outcome"]["bytes_restored"], 3 * (1 << 20));
    assert_eq!(v["outcome"]["ranges"][1]["offset"], 9 << 20);
    assert_eq!(sha(&dev.path), before);
    assert!(journals(&jdir).is_empty(), "journal deleted");
}

#[test]
fn a_mounted_device_is_refused_and_unchanged() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "fs.img", 16 << 20, 14);
    let dev = LoopDevice::attach(&f, None);
    let mnt = Mounted::ext4(&dev.path, &dir.path().join("mnt"));
    // Read-only, so the file system itself stops writing and any change is ours.
    let ok = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&mnt.dir)
        .status()
        .unwrap();
    assert!(ok.success());
    let before = sha(&dev.path);
    for extra in [&[][..], &["--no-preserve"][..]] {
        write_pattern(dev.as_str(), &dir.path().join("j"), extra)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("in use").and(predicate::str::contains(mnt.dir.to_str().unwrap())));
    }
    assert_eq!(sha(&dev.path), before);
}

#[test]
fn ctrl_c_and_sigterm_restore_and_exit_130_and_143() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 15);
    let dev = LoopDevice::attach(&f, None);
    let before = sha(&dev.path);
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let child = write_pattern(
            dev.as_str(),
            &dir.path().join("j"),
            &["--passes", "1000", "--pause-ms", "20"],
        )
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(700));
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(err.contains("original data is back"), "{err}");
        assert_eq!(sha(&dev.path), before);
    }
}

#[test]
fn sigkill_at_seeded_points_then_restore_loses_nothing() {
    require_loop_devices!();
    let seed: u64 = std::env::var("FLASHLAB_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64);
    println!("fault-injection seed {seed} (FLASHLAB_FAULT_SEED={seed} reruns it)");
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 16);
    let dev = LoopDevice::attach(&f, None);
    let original = std::fs::read(&dev.path).unwrap();
    let before = sha(&dev.path);
    let jdir = dir.path().join("j");
    // With the extra range the declared bytes are 1M..10M: 9 journal records,
    // 1 journal sync, 2 passes x 9 device writes, 2 restore batches (8 + 1
    // records, so a crash can fall between them); 31 means no crash at all.
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut trials = 0;
    let mut torn = 0;
    for trial in 0..60 {
        let at = 1 + next(31);
        let out = write_pattern(dev.as_str(), &jdir, &["--passes", "2", "--range", "3M+6M"])
            .env("FLASHLAB_CRASH_AT", at.to_string())
            .output()
            .unwrap();
        let pending = journals(&jdir);
        // Every fifth trial that died after journalling, cut the journal short
        // at a random byte: a power cut while the journal itself was written.
        // (Only inside the records: a journal cut inside its header line is
        // refused as corrupt, which the corrupted-journal test covers.)
        let header_end = |p: &Path| {
            let b = std::fs::read(p).unwrap();
            b.iter()
                .enumerate()
                .filter(|(_, c)| **c == b'\n')
                .nth(1)
                .map_or(0, |(i, _)| i as u64 + 1)
        };
        if out.status.code().is_none()
            && at <= 10
            && trial % 5 == 0
            && pending.len() == 1
            && std::fs::metadata(&pending[0]).unwrap().len() > header_end(&pending[0]) + 1
        {
            let len = std::fs::metadata(&pending[0]).unwrap().len();
            let start = header_end(&pending[0]) + 1;
            let cut = start + next(len - start);
            std::fs::OpenOptions::new()
                .write(true)
                .open(&pending[0])
                .unwrap()
                .set_len(cut)
                .unwrap();
            torn += 1;
        }
        if !pending.is_empty() {
            flashlab()
                .args(["restore", dev.as_str(), "--journal-dir"])
                .arg(&jdir)
                .assert()
                .success();
        }
        assert_eq!(
            sha(&dev.path),
            before,
            "seed {seed} trial {trial}: crash at step {at} lost data"
        );
        assert!(journals(&jdir).is_empty());
        reset(&dev.path, &original);
        trials += 1;
    }
    println!("{trials} crash points, {torn} torn journals, zero bytes lost");
}

/// Ranges are journalled as the test reaches them: a crash between one range's
/// writes and the next range's journal record, or inside that record (a torn
/// tail), loses nothing either.
#[test]
fn a_crash_at_every_step_of_a_two_range_run_loses_nothing() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 18);
    let dev = LoopDevice::attach(&f, None);
    let original = std::fs::read(&dev.path).unwrap();
    let before = sha(&dev.path);
    let jdir = dir.path().join("j");
    // Pass 1: 1M..3M journalled (records 1-2, sync 3) and written (4-5), then
    // 9M..10M journalled (record 6, sync 7) and written (8); pass 2 writes
    // 9-11; the restore is one batch (12); 13 runs to the end.
    for at in 1..=13u64 {
        let out = write_pattern(dev.as_str(), &jdir, &["--passes", "2"])
            .env("FLASHLAB_CRASH_AT", at.to_string())
            .output()
            .unwrap();
        let pending = journals(&jdir);
        if at == 13 {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(pending.is_empty());
        } else {
            assert_eq!(out.status.code(), None, "step {at}: killed");
        }
        if at == 7 {
            // Killed before the sync of the second range's record: cut it
            // short, as a power cut in mid-append would. The first range's
            // records (written and synced before its data changed) stay.
            let j = &pending[0];
            let len = std::fs::metadata(j).unwrap().len();
            let cut = len - (1 << 19);
            std::fs::OpenOptions::new()
                .write(true)
                .open(j)
                .unwrap()
                .set_len(cut)
                .unwrap();
        }
        if !pending.is_empty() {
            let out = flashlab()
                .args(["--json", "restore", dev.as_str(), "--journal-dir"])
                .arg(&jdir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "step {at}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let journalled = if at <= 2 {
                at - 1
            } else if at <= 6 {
                2
            } else {
                3
            } << 20;
            let torn = at == 7;
            assert_eq!(
                v["restored"][0]["bytes_restored"],
                journalled - if torn { 1 << 20 } else { 0 },
                "step {at}"
            );
            assert_eq!(v["restored"][0]["torn_tail_skipped"], torn, "step {at}");
        }
        assert_eq!(sha(&dev.path), before, "crash at step {at} lost data");
        assert!(journals(&jdir).is_empty());
        reset(&dev.path, &original);
    }
}

#[test]
fn a_corrupted_journal_is_refused_and_restores_nothing() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 17);
    let dev = LoopDevice::attach(&f, None);
    let jdir = dir.path().join("j");
    // Steps: 1M..3M journalled (2 records, a sync) and written (2), then
    // 9M..10M journalled (a record, a sync): die just before writing it, with
    // every range in the journal.
    let out = write_pattern(dev.as_str(), &jdir, &[])
        .env("FLASHLAB_CRASH_AT", "8")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed");
    let j = journals(&jdir).remove(0);
    let mut bytes = std::fs::read(&j).unwrap();
    let n = bytes.len();
    bytes[n - 1000] ^= 0x40; // inside the last record's data (9M..10M)
    std::fs::write(&j, &bytes).unwrap();
    let during = sha(&dev.path);
    flashlab()
        .args(["restore"])
        .arg(&j)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("corrupted").and(predicate::str::contains("bytes 9437184..10485760")));
    assert_eq!(sha(&dev.path), during, "nothing restored from a corrupted journal");
    // Repaired, it restores.
    bytes[n - 1000] ^= 0x40;
    std::fs::write(&j, &bytes).unwrap();
    flashlab().args(["restore"]).arg(&j).assert().success();
    assert!(journals(&jdir).is_empty());
}

#[test]
fn a_journal_for_another_identity_needs_force() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 19);
    let dev = LoopDevice::attach(&f, None);
    let before = sha(&dev.path);
    let jdir = dir.path().join("j");
    // Die just before writing 9M..10M (step 8): the journal holds every range,
    // and 1M..3M on the device has changed.
    let out = write_pattern(dev.as_str(), &jdir, &[])
        .env("FLASHLAB_CRASH_AT", "8")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed");
    let j = journals(&jdir).remove(0);
    let during = sha(&dev.path);
    assert_ne!(during, before);
    // The journal now says the device was 4 KiB larger: another device.
    let size = 16u64 << 20;
    let text = std::fs::read(&j).unwrap();
    let needle = format!("\"size_bytes\":{size}");
    let pos = text
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .expect("size in header");
    let mut edited = text[..pos].to_vec();
    edited.extend_from_slice(format!("\"size_bytes\":{}", size + 4096).as_bytes());
    edited.extend_from_slice(&text[pos + needle.len()..]);
    std::fs::write(&j, &edited).unwrap();
    for target in [j.to_str().unwrap(), dev.as_str()] {
        flashlab()
            .args(["restore", target, "--journal-dir"])
            .arg(&jdir)
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains(format!("{} bytes", size + 4096))
                    .and(predicate::str::contains(format!("{size} bytes")))
                    .and(predicate::str::contains("--force")),
            );
        assert_eq!(sha(&dev.path), during, "a refused restore writes nothing");
        assert_eq!(journals(&jdir).len(), 1, "a refused restore keeps the journal");
    }
    flashlab().args(["restore", "--force"]).arg(&j).assert().success();
    assert_eq!(sha(&dev.path), before);
    assert!(journals(&jdir).is_empty());
}
