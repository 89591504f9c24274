//! Data-safety holes a hostile tester found: outputs that are not plain files, a
//! probe on a mounted device, sizes that overflow or overallocate, a restore
//! that fails at the end of a run, a journal replaced by a directory,
//! stderr that cannot be written, targets too small or not a whole number of
//! blocks, and a signal after a step's last write. Each failed before.

use std::path::Path;
use std::process::Stdio;

use assert_cmd::assert::OutputAssertExt;
use predicates::prelude::*;

use super::{journals, restore, sha, write_pattern};
use crate::support::{LoopDevice, Mounted, flashlab, random_file, require_loop_devices};

fn mkfifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
}

/// `probe --html` and `report -o` refuse, before any measuring, a path that
/// is not a regular file (a FIFO, a symbolic link, a character device as
/// root) or that holds the target's bytes; the path is left as it was.
#[test]
fn a_report_is_never_renamed_over_anything_but_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let real = random_file(dir.path(), "real.html", 4096, 60);
    let link = dir.path().join("link.html");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let mut odd = vec![(fifo.clone(), "a FIFO"), (link.clone(), "a symbolic link")];
    if rustix::process::geteuid().is_root() {
        // /dev/full's numbers, in our own directory.
        let dev = dir.path().join("full");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &dev,
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            rustix::fs::makedev(1, 7),
        )
        .unwrap();
        odd.push((dev, "a character device"));
    }
    let run = dir.path().join("run.json");
    let out = flashlab()
        .args(["align", "sim:demo", "--json", "--no-store"])
        .output()
        .unwrap();
    std::fs::write(&run, out.stdout).unwrap();
    let real_before = sha(&real);
    for (p, what) in &odd {
        let kind = std::fs::symlink_metadata(p).unwrap().file_type();
        for args in [
            vec!["probe", "sim:demo", "--no-store", "--html", p.to_str().unwrap()],
            vec!["report", run.to_str().unwrap(), "-o", p.to_str().unwrap()],
        ] {
            let out = flashlab().args(&args).arg("--db").arg(&db).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(what) && err.contains("hint:"), "{args:?}: {err}");
            assert!(!err.contains("done"), "refused before any step: {err}");
            assert_eq!(std::fs::symlink_metadata(p).unwrap().file_type(), kind, "{what} kept");
        }
    }
    assert_eq!(sha(&real), real_before, "the link's target untouched");
    // The image under test, and a stored run's target.
    let v = random_file(dir.path(), "v.img", 8 << 20, 61);
    let before = sha(&v);
    let out = flashlab()
        .args(["probe", v.to_str().unwrap(), "--html", v.to_str().unwrap(), "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("target measured"), "{err}");
    flashlab()
        .args(["align", v.to_str().unwrap(), "--db"])
        .arg(&db)
        .assert()
        .success();
    let out = flashlab()
        .args(["report", "1", "-o", v.to_str().unwrap(), "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(sha(&v), before, "the image is not replaced by a report");
}

/// The file behind a loop device is the device's bytes too.
#[test]
fn a_report_over_the_file_behind_the_target_loop_device_is_refused() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "l.img", 8 << 20, 62);
    let before = sha(&f);
    let l = LoopDevice::attach(&f, None);
    flashlab()
        .args(["probe", l.as_str(), "--no-store", "--html", f.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("target measured"));
    assert_eq!(sha(&f), before);
}

/// `probe --write` on a mounted device is refused as `bench --write` is,
/// not quietly left without its writing steps.
#[test]
fn probe_write_on_a_mounted_device_is_refused() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "fs.img", 32 << 20, 63);
    let l = LoopDevice::attach(&f, None);
    let _mnt = Mounted::ext4(&l.path, &dir.path().join("mnt"));
    let jdir = dir.path().join("j");
    for cmd in ["probe", "bench", "capacity"] {
        let out = flashlab()
            .args([cmd, l.as_str(), "--write", "--no-store", "--json", "--journal-dir"])
            .arg(&jdir)
            .output()
            .unwrap();
        let v = crate::support::document(&out, 2, cmd);
        assert_eq!(v["error"]["kind"], "usage", "{cmd}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("in use"), "{cmd}: {v}");
        assert!(journals(&jdir).is_empty());
    }
}

/// Sizes a user gives are checked, alone and multiplied, before anything
/// is allocated: a 4 GiB read is not cut to 32 bits, a 16 GiB buffer is not
/// attempted.
#[test]
fn sizes_that_overflow_a_request_or_a_buffer_are_refused() {
    for (args, says) in [
        (vec!["scatter", "sim:demo", "--block", "4G"], "--block"),
        (
            vec!["scatter", "sim:demo", "--block", "2G", "--length", "4G"],
            "--block",
        ),
        (vec!["bench", "sim:demo", "--bs", "64M", "--qd", "256"], "16 GiB buffer"),
    ] {
        let out = flashlab().args(&args).arg("--no-store").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.contains("hint:"), "{args:?}: {err}");
    }
}

/// The journal is damaged while the run writes (here: cut short by another
/// program): the end-of-run restore fails, and says that the data is NOT
/// back, keeps the journal and names the exact command.
#[test]
fn a_restore_that_fails_at_the_end_says_the_data_is_not_back() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 64);
    let jdir = dir.path().join("j");
    let _forget = super::ForgetJournals(jdir.clone());
    let child = write_pattern(f.to_str().unwrap(), &jdir, &["--passes", "100000", "--pause-ms", "20"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline
        && journals(&jdir)
            .first()
            .is_none_or(|j| std::fs::metadata(j).map_or(0, |m| m.len()) < 3 << 20)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let j = journals(&jdir).remove(0);
    let len = std::fs::metadata(&j).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&j)
        .unwrap()
        .set_len(len - 4096)
        .unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("NOT back"), "{err}");
    let command = format!("flashlab restore {} --journal-dir {}", f.display(), jdir.display());
    assert!(err.contains(&command), "{err}");
    assert!(!err.contains("original data is back"), "{err}");
    assert_eq!(journals(&jdir), vec![j], "the journal is kept");
}

/// A directory where a journal was: refused with exit 2, nothing written.
#[test]
fn a_journal_replaced_by_a_directory_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("j");
    let fake = jdir.join("x.fljournal");
    std::fs::create_dir_all(&fake).unwrap();
    restore(&fake, &jdir, &[])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a regular file").and(predicate::str::contains("hint:")));
    assert!(fake.is_dir());
}

/// stderr to /dev/full or to a closed pipe: exit 1 once the data is back,
/// as for stdout.
#[test]
fn stderr_that_cannot_be_written_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 65);
    let before = sha(&f);
    let jdir = dir.path().join("j");
    let full = || Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
    let status = write_pattern(f.to_str().unwrap(), &jdir, &[])
        .stdout(Stdio::null())
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    // A pipe whose reader is gone before the first line.
    let mut child = write_pattern(f.to_str().unwrap(), &jdir, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(1));
    assert_eq!(sha(&f), before);
    assert!(journals(&jdir).is_empty());
}

/// A 4095-byte file is too small for align, said so; a file of 8 MiB +
/// 1234 bytes is measured up to its last whole block, said so, and its
/// tail is untouched.
#[test]
fn small_and_ragged_files_say_what_they_measure() {
    let dir = tempfile::tempdir().unwrap();
    let small = random_file(dir.path(), "small.img", 4095, 66);
    let out = flashlab()
        .args(["align", small.to_str().unwrap(), "--no-store"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("too small for align") && err.contains("needs at least"),
        "{err}"
    );
    let ragged = random_file(dir.path(), "ragged.img", (8 << 20) + 1234, 67);
    let before = sha(&ragged);
    let out = flashlab()
        .args([
            "capacity",
            ragged.to_str().unwrap(),
            "--write",
            "--no-store",
            "--json",
            "--journal-dir",
        ])
        .arg(dir.path().join("j"))
        .output()
        .unwrap();
    let v = crate::support::document(&out, 0, "the run");
    assert_eq!(v["target"]["size_bytes"], (8 << 20) + 1024, "{v}");
    assert_eq!(v["capacity"]["verdict"], "genuine", "{v}");
    assert!(v["notes"].to_string().contains("last 210 bytes"), "{v}");
    assert_eq!(sha(&ragged), before);
}

/// A target where not even one AU fits past the first 32 MiB: the refusal
/// blames no --max nobody gave, with or without --full.
#[test]
fn open_au_on_a_target_too_small_for_one_au_blames_no_max() {
    for extra in [&[][..], &["--full"][..]] {
        let out = flashlab()
            .args([
                "open-au",
                "sim:demo,capacity=36M,open_aus_random=4,open_aus_linear=4",
                "--no-store",
            ])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("one AU") && !err.contains("--max"), "{err}");
        assert!(err.contains("hint: the sweep's AU of 4 MiB"), "{err}");
    }
}

/// open-au --full declares whole AUs (flashbench's table), the sweep only
/// the start of each; both from the same pool of `--max` AUs.
#[test]
fn open_au_full_declares_whole_aus_and_the_sweep_their_starts() {
    let run = |extra: &[&str]| {
        let out = flashlab()
            .args([
                "open-au",
                "sim:demo,capacity=1G,au_size=16M,open_aus_random=4,open_aus_linear=4",
                "--erase-size",
                "16M",
                "--max",
                "4",
                "--no-store",
                "-v",
            ])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{err}");
        err
    };
    let full = run(&["--full"]);
    assert!(full.contains("will write 64 MiB in 4 ranges"), "{full}");
    // 256 chunks of 16 KiB at the start of each AU.
    let sweep = run(&[]);
    assert!(sweep.contains("will write 16 MiB in 4 ranges"), "{sweep}");
}

/// SIGTERM while the last writing step restores its data: the data comes
/// back, and the run stops with 143 instead of finishing as if nothing
/// happened.
#[test]
fn a_sigterm_after_the_last_write_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "b.img", 64 << 20, 68);
    let before = sha(&f);
    let out = flashlab()
        .args([
            "bench",
            f.to_str().unwrap(),
            "--write",
            "--no-store",
            "--rw",
            "randwrite",
        ])
        .args(["--size", "1M", "--journal-dir"])
        .arg(dir.path().join("j"))
        .env("FLASHLAB_SIGTERM_AT", "restore batch#1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    assert_eq!(sha(&f), before);
    assert!(journals(&dir.path().join("j")).is_empty());
}
