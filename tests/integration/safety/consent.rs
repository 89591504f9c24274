//! Consent, refusals before anything is written, signals, and output that
//! cannot be written.

use std::process::{Command, Stdio};

use assert_cmd::assert::OutputAssertExt;
use predicates::prelude::*;

use super::{RANGES, journals, sha, write_pattern};
use crate::support::{LoopDevice, Mounted, flashlab, random_file, require_loop_devices};

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
fn preserving_write_on_a_loop_device_gives_back_every_byte_with_each_engine() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 13);
    let dev = LoopDevice::attach(&f, None);
    let before = sha(&dev.path);
    let jdir = dir.path().join("journals");
    for engine in ["psync", "io_uring", "auto"] {
        let out = write_pattern(dev.as_str(), &jdir, &["--json", "--passes", "2", "--engine", engine])
            .output()
            .unwrap();
        let v = crate::support::document(&out, 0, engine);
        assert_eq!(v["outcome"]["bytes_written"], 2 * 3 * (1 << 20));
        assert_eq!(v["outcome"]["bytes_restored"], 3 * (1 << 20));
        assert_eq!(v["outcome"]["ranges"][1]["offset"], 9 << 20);
        assert_eq!(sha(&dev.path), before, "{engine}");
        assert!(journals(&jdir).is_empty(), "journal deleted");
    }
}

/// The defect of the first engine: io_uring kept a freed buffer registered,
/// the journal stored the wrong bytes and "verified" them against
/// themselves. The exact command that lost 3 MB.
#[test]
fn open_au_with_io_uring_on_a_file_gives_back_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "big.img", 128 << 20, 14);
    let before = sha(&f);
    let out = flashlab()
        .args([
            "open-au",
            f.to_str().unwrap(),
            "--engine",
            "io_uring",
            "--write",
            "--json",
        ])
        .args(["--erase-size", "1M", "--max", "4", "--linear", "--journal-dir"])
        .arg(dir.path().join("j"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_ran_io_uring_and_wrote(&out.stdout);
    assert_eq!(sha(&f), before);
    // What was written, where, and what came back, in that order.
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with("wrote ")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let touched = v["writes"][0]["ranges_touched"].as_u64().unwrap();
    assert!(line.contains(" of the device ("), "{err}");
    assert!(
        line.contains(&format!(
            "({touched} of the 4 ranges saved first); put the saved data back (0 B rewritten)"
        )),
        "{err}"
    );
    assert!(line.ends_with(" back the same; journal deleted"), "{err}");
}

/// The run really wrote, and through io_uring (no silent fallback to psync).
fn assert_ran_io_uring_and_wrote(stdout: &[u8]) {
    let v: serde_json::Value = serde_json::from_slice(stdout).unwrap();
    let w = &v["writes"][0];
    assert_eq!(w["test"], "open_au", "{v}");
    assert_eq!(w["engines"], serde_json::json!(["io_uring"]), "{v}");
    // open-au writes the start of each AU with the bytes it held: nothing
    // needs writing back, and every journalled AU is read back and checked
    // (1 MiB each at --erase-size 1M, more at align's). How many AUs, and
    // how much of each, a sweep reaches on a loop device depends on its
    // timing: a busy machine's noise can end it at 2 of 4 after 528 KiB
    // (a fresh-clone CI run beside two builds). Dozens of 16 KiB writes
    // through reused io_uring buffers are what the defect needed.
    let written = w["bytes_written"].as_u64().unwrap();
    assert!(written >= 256 << 10, "{v}");
    let touched = w["ranges_touched"].as_u64().unwrap();
    assert!((1..=4).contains(&touched), "{v}");
    let verified = w["bytes_verified"].as_u64().unwrap();
    assert!(verified >= touched << 20 && verified >= written, "{v}");
}

#[test]
fn open_au_with_io_uring_on_a_loop_device_gives_back_every_byte() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "big.img", 256 << 20, 15);
    let dev = LoopDevice::attach(&f, None);
    let before = sha(&dev.path);
    let out = flashlab()
        .args(["open-au", dev.as_str(), "--engine", "io_uring", "--write", "--json"])
        .args(["--erase-size", "4M", "--max", "4", "--linear", "--journal-dir"])
        .arg(dir.path().join("j"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_ran_io_uring_and_wrote(&out.stdout);
    assert_eq!(sha(&dev.path), before);
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

/// `losetup -r`: the kernel lets a read-only device be opened for writing and
/// fails only the writes, which once left a journal restore could not apply.
#[test]
fn a_read_only_loop_device_is_refused_before_any_journal() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "ro.img", 16 << 20, 16);
    let out = Command::new("losetup")
        .args(["--find", "--show", "--read-only"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.success());
    let dev = LoopDevice {
        path: String::from_utf8(out.stdout).unwrap().trim().into(),
    };
    let jdir = dir.path().join("j");
    write_pattern(dev.as_str(), &jdir, &[])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("read-only").and(predicate::str::contains("hint:")));
    assert!(journals(&jdir).is_empty(), "no journal was created");
}

#[test]
fn ctrl_c_and_sigterm_restore_and_exit_130_and_143() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 15);
    let dev = LoopDevice::attach(&f, None);
    let before = sha(&dev.path);
    for (sig, code, engine) in [(libc::SIGINT, 130, "psync"), (libc::SIGTERM, 143, "io_uring")] {
        let child = write_pattern(
            dev.as_str(),
            &dir.path().join("j"),
            &["--passes", "1000", "--pause-ms", "20", "--engine", engine],
        )
        .stderr(Stdio::piped())
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

/// stdout and stderr that cannot be written (a full disk) once panicked
/// mid-run with exit 101. Now the data comes back and the run fails with 1.
#[test]
fn unwritable_output_ends_the_run_after_the_restore_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 17);
    let before = sha(&f);
    let jdir = dir.path().join("j");
    for (out, err) in [(true, false), (true, true), (false, true)] {
        let full = || Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
        let mut c = write_pattern(f.to_str().unwrap(), &jdir, &["--json", "--passes", "2"]);
        if out {
            c.stdout(full());
        }
        let mut stderr_file = None;
        if err {
            c.stderr(full());
        } else {
            let p = dir.path().join("stderr");
            c.stderr(Stdio::from(std::fs::File::create(&p).unwrap()));
            stderr_file = Some(p);
        }
        let status = c.status().unwrap();
        let code = status.code();
        // Output that cannot be written fails the run (exit 1), stderr as
        // much as stdout, once the data is back.
        assert_eq!(code, Some(1), "stdout full {out}, stderr full {err}");
        if let Some(p) = stderr_file {
            let text = std::fs::read_to_string(p).unwrap();
            assert!(!text.contains("panicked"), "{text}");
            assert!(text.contains("cannot write the output"), "{text}");
        }
        assert_eq!(sha(&f), before, "restored before failing");
        assert!(journals(&jdir).is_empty());
    }
}

#[test]
fn huge_counts_and_special_profile_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["open-au", "sim:demo", "--erase-size", "4M", "--max", "1000000000"][..],
        &[
            "open-au",
            "sim:demo",
            "--erase-size",
            "4M",
            "--max",
            "4611686018427387904",
        ][..],
        &["open-au", "sim:demo", "--erase-size", "1T", "--max", "2"][..],
        &["fat", "sim:demo", "--erase-size", "4M", "--max", "4398046511104"][..],
        &["scatter", "sim:demo", "--length", "64G", "--block", "512"][..],
        &["info", "sim:demo,page_program_ns=18446744073709551615"][..],
        &["info", "sim:demo,capacity=18014398509481984"][..],
    ] {
        let started = std::time::Instant::now();
        let out = flashlab().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error:") && !err.contains("internal"),
            "{args:?}: {err}"
        );
        assert!(
            started.elapsed().as_secs() < 10,
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
    // A FIFO would block a plain read; /dev/zero would never end.
    let fifo = dir.path().join("card.toml");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    let zero = dir.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for p in [&fifo, &zero] {
        flashlab()
            .arg("info")
            .arg(format!("sim:{}", p.display()))
            .timeout(std::time::Duration::from_secs(10))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("not a regular file"));
    }
}
