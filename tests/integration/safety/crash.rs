//! SIGKILL at every step and at seeded random steps, with each engine, and
//! inside `restore` itself; then `restore` loses nothing.

use super::{Rng, journals, layout, reset, restore, seed, sha, write_pattern};
use crate::support::{LoopDevice, random_file, require_loop_devices};

/// Ranges are journalled as the test reaches them: a crash between one
/// range's writes and the next range's record, inside a commit, or in the
/// middle of an uncommitted record (a torn tail) loses nothing.
#[test]
fn a_crash_at_every_step_of_a_two_range_run_loses_nothing() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 18);
    let dev = LoopDevice::attach(&f, None);
    let original = std::fs::read(&dev.path).unwrap();
    let before = sha(&dev.path);
    let jdir = dir.path().join("j");
    // Pass 1: 1M..3M journalled (records 1-2; commit: 3 records synced, 4
    // slot A written) and written (5-6), then 9M..10M journalled (7; commit
    // 8-9) and written (10); pass 2 writes 11-13; the restore batch (14),
    // the journal's deletion (15); 16 runs to the end.
    for at in 1..=16u64 {
        let out = write_pattern(dev.as_str(), &jdir, &["--passes", "2"])
            .env("FLASHLAB_CRASH_AT", at.to_string())
            .output()
            .unwrap();
        let pending = journals(&jdir);
        if at == 16 {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(pending.is_empty());
        } else {
            assert_eq!(out.status.code(), None, "step {at}: killed");
        }
        let torn = at == 8;
        if torn {
            // Killed after the second range's record was written but before
            // its commit: cut it short, as a power cut in mid-append would.
            // The first range's records were committed before its data
            // changed, and stay.
            let j = &pending[0];
            let len = std::fs::metadata(j).unwrap().len();
            std::fs::OpenOptions::new()
                .write(true)
                .open(j)
                .unwrap()
                .set_len(len - (1 << 19))
                .unwrap();
        }
        if !pending.is_empty() {
            let out = restore(&dev.path, &jdir, &["--json"]).output().unwrap();
            let v = crate::support::document(&out, 0, &format!("step {at}"));
            let journalled: u64 = match at {
                1 | 2 => at - 1,
                3..=7 => 2,
                _ => 3,
            } << 20;
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

/// Seeded SIGKILLs, for each engine: during journalling (sometimes with the
/// uncommitted part of the journal torn, as a power cut leaves it), during
/// writes, during the run's own restore; and a third of the time the
/// `restore` that follows is itself killed, then run again.
fn seeded_crashes(engine: &str, trials: u32) {
    let seed = seed(&format!("crash trials with {engine}"));
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 16);
    let dev = LoopDevice::attach(&f, None);
    let original = std::fs::read(&dev.path).unwrap();
    let before = sha(&dev.path);
    let jdir = dir.path().join("j");
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // With the extra range (overlapping both) the declared bytes merge into 1M..10M: records
    // 1-9, commit 10-11, 2 passes x 9 writes (12-29), restore batches of 8
    // and 1 records (30, 31), deletion (32); 33 means no crash at all.
    let (mut torn, mut restore_crashes) = (0, 0);
    for trial in 0..trials {
        let at = 1 + rng.below(33);
        let out = write_pattern(
            dev.as_str(),
            &jdir,
            &["--passes", "2", "--range", "2M+8M", "--engine", engine],
        )
        .env("FLASHLAB_CRASH_AT", at.to_string())
        .output()
        .unwrap();
        assert_eq!(out.status.code().is_none(), at < 33, "step {at}");
        let pending = journals(&jdir);
        // Killed before the commit (step 10 or earlier): records not yet
        // synced may be lost by a power cut. Cut the journal somewhere past
        // the commit slots, every other time.
        if at <= 10 && trial % 2 == 0 && pending.len() == 1 {
            let bytes = std::fs::read(&pending[0]).unwrap();
            let l = layout(&bytes);
            let start = l.slots as u64 + 64;
            if bytes.len() as u64 > start + 1 {
                let cut = start + rng.below(bytes.len() as u64 - start);
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&pending[0])
                    .unwrap()
                    .set_len(cut)
                    .unwrap();
                torn += 1;
            }
        }
        if !pending.is_empty() && rng.below(3) == 0 {
            // The restore's own steps: batches (1, 2) and the deletion (3).
            let k = 1 + rng.below(3);
            let out = restore(&dev.path, &jdir, &["--engine", engine])
                .env("FLASHLAB_CRASH_AT", k.to_string())
                .output()
                .unwrap();
            // A short journal has a single batch: step 3 may not exist.
            if out.status.code().is_none() {
                restore_crashes += 1;
            }
        }
        if !journals(&jdir).is_empty() {
            let out = restore(&dev.path, &jdir, &["--engine", engine]).output().unwrap();
            assert!(
                out.status.success(),
                "seed {seed} trial {trial} (step {at}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(
            sha(&dev.path),
            before,
            "seed {seed} trial {trial}: crash at step {at} lost data"
        );
        assert!(journals(&jdir).is_empty());
        reset(&dev.path, &original);
    }
    println!(
        "{engine}: {trials} crash points, {torn} torn journals, {restore_crashes} restores killed, zero bytes lost"
    );
}

#[test]
fn sigkill_at_seeded_points_with_psync_then_restore_loses_nothing() {
    require_loop_devices!();
    seeded_crashes("psync", 50);
}

#[test]
fn sigkill_at_seeded_points_with_io_uring_then_restore_loses_nothing() {
    require_loop_devices!();
    seeded_crashes("io_uring", 50);
}

/// capacity writes a dense region and samples across the whole device in
/// one journalled batch; killed at steps spread over journalling, writing
/// and its own restore, `restore` puts every byte back.
#[test]
fn capacity_killed_anywhere_loses_nothing() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "c.img", 48 << 20, 23);
    let dev = LoopDevice::attach(&f, None);
    let original = std::fs::read(&dev.path).unwrap();
    let before = sha(&dev.path);
    let jdir = dir.path().join("j");
    let mut killed = 0;
    // The survey writes 2 samples: its crash steps end before 16.
    for at in [1u64, 2, 3, 4, 5, 6, 8, 10, 12, 14, 1 << 20] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_flashlab"))
            .args(["capacity", dev.as_str(), "--push", "4M", "--write", "--journal-dir"])
            .arg(&jdir)
            .env("FLASHLAB_CRASH_AT", at.to_string())
            .envs(crate::support::test_env())
            .output()
            .unwrap();
        if out.status.code().is_none() {
            killed += 1;
            if !journals(&jdir).is_empty() {
                let r = restore(&dev.path, &jdir, &[]).output().unwrap();
                assert!(r.status.success(), "step {at}: {}", String::from_utf8_lossy(&r.stderr));
            }
        } else {
            assert!(
                out.status.success(),
                "step {at}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(journals(&jdir).is_empty(), "step {at}");
        assert_eq!(sha(&dev.path), before, "capacity killed at step {at} lost data");
        reset(&dev.path, &original);
    }
    assert!(killed >= 8, "only {killed} of the steps were reached");
}

/// A journal left by a crash holds bytes that are not back yet: a writing
/// test on that device says so first and writes nothing until `restore`.
#[test]
fn a_writing_test_refuses_a_device_with_a_pending_journal() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "p.img", 16 << 20, 31);
    let dev = LoopDevice::attach(&f, None);
    let before = sha(&dev.path);
    let jdir = dir.path().join("j");
    let _ = super::crashed_journal(dev.as_str(), &jdir, 10);
    let crashed = sha(&dev.path);
    assert_ne!(crashed, before, "the crash left its pattern");
    let out = crate::support::flashlab()
        .args(["page", dev.as_str(), "--erase-size", "1M", "--write", "--journal-dir"])
        .arg(&jdir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pending journal") && err.contains("flashlab restore"),
        "{err}"
    );
    assert_eq!(sha(&dev.path), crashed, "nothing written");
    assert!(restore(&dev.path, &jdir, &[]).output().unwrap().status.success());
    assert_eq!(sha(&dev.path), before);
}
