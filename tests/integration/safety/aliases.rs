//! The same bytes through another path, and two runs at once: a file and its
//! loop device, two loop devices over one file, a file behind a mounted loop
//! device or served by FUSE, `restore` during a run, and a journal restored
//! onto a different device at the same path.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use assert_cmd::assert::OutputAssertExt;
use predicates::prelude::*;

use super::{crashed_journal, journals, restore, sha, write_pattern};
use crate::support::{LoopDevice, Mounted, random_file, require_loop_devices, which};

/// A long preserving run on `target` (stopped with SIGTERM by the caller).
fn long_run(target: &str, jdir: &Path) -> Child {
    let child = write_pattern(target, jdir, &["--passes", "100000", "--pause-ms", "20"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until it has journalled and started writing.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while journals(jdir).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    child
}

fn stop(child: Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(err.contains("original data is back"), "{err}");
}

#[test]
fn a_second_writer_through_any_alias_is_refused_and_nothing_is_lost() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 21);
    let before = sha(&f);
    let dev = LoopDevice::attach(&f, None);
    let other = LoopDevice::attach(&f, None);
    let (file, loop1, loop2) = (f.to_str().unwrap(), dev.as_str(), other.as_str());
    // Whichever path the first run writes through, a second run through the
    // same path or any alias is refused before it writes anything.
    for (first, seconds) in [(file, [file, loop1, loop2]), (loop1, [loop1, file, loop2])] {
        let j1 = dir.path().join("j1");
        let run = long_run(first, &j1);
        for second in seconds {
            let j2 = dir.path().join("j2");
            write_pattern(second, &j2, &[])
                .assert()
                .code(2)
                .stderr(predicate::str::contains("in use").and(predicate::str::contains("hint:")));
            assert!(journals(&j2).is_empty(), "{first} then {second}: no second journal");
            // restore during the run: the live journal is not touched.
            restore(&journals(&j1)[0], &j1, &[])
                .assert()
                .code(2)
                .stderr(predicate::str::contains("still going").or(predicate::str::contains("in use")));
            restore(Path::new(second), &j1, &[]).assert().code(2);
            assert_eq!(journals(&j1).len(), 1, "the live journal is kept");
        }
        stop(run);
        assert_eq!(sha(&f), before, "first run through {first}");
        assert!(journals(&j1).is_empty());
    }
}

#[test]
fn the_file_behind_a_mounted_loop_device_is_in_use() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "fs.img", 32 << 20, 22);
    let dev = LoopDevice::attach(&f, None);
    let second = LoopDevice::attach(&f, None);
    let mnt = Mounted::ext4(&dev.path, &dir.path().join("mnt"));
    Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&mnt.dir)
        .status()
        .unwrap();
    let before = sha(&f);
    // `info` says so, naming the mount, for the file and the other loop device.
    for t in [f.to_str().unwrap(), second.as_str()] {
        let v = crate::support::json(&["info", t]);
        assert_eq!(v["info"]["in_use"], true, "{t}");
        let why = v["info"]["in_use_by"].to_string();
        assert!(why.contains(mnt.dir.to_str().unwrap()), "{t}: {why}");
    }
    // Writing through either is refused, and so is a journal directory
    // inside the mounted filesystem.
    let jdir_inside = mnt.dir.join("journals");
    for (t, jdir) in [
        (f.to_str().unwrap(), dir.path().join("j")),
        (second.as_str(), dir.path().join("j")),
        (f.to_str().unwrap(), jdir_inside.clone()),
    ] {
        write_pattern(t, &jdir, &[])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("is mounted on").and(predicate::str::contains("hint:")));
    }
    assert_eq!(sha(&f), before);
}

/// fuse2fs serves an image as a filesystem with no loop device in between;
/// a journal inside it would rest on the bytes it protects.
#[test]
fn a_journal_directory_on_a_fuse_mount_of_the_target_is_refused() {
    if which("fuse2fs").is_none() || !Path::new("/dev/fuse").exists() {
        crate::support::skip("no fuse2fs or /dev/fuse");
        return;
    }
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("fs.img");
    std::fs::write(&img, vec![0u8; 32 << 20]).unwrap();
    assert!(
        Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&img)
            .status()
            .unwrap()
            .success()
    );
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    assert!(
        Command::new("fuse2fs")
            .arg(&img)
            .arg(&mnt)
            .args(["-o", "fakeroot"])
            .status()
            .unwrap()
            .success()
    );
    let _unmount = Mounted { dir: mnt.clone() };
    // fuse2fs itself writes the image (its superblock) around the mount, so
    // the test compares the ranges flashlab would have written, once the
    // mount has settled.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let declared = |img: &Path| {
        let b = std::fs::read(img).unwrap();
        [b[1 << 20..3 << 20].to_vec(), b[9 << 20..10 << 20].to_vec()]
    };
    let before = declared(&img);
    let out = write_pattern(img.to_str().unwrap(), &mnt.join("j"), &[])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("fuse2fs") || err.contains("itself"), "{err}");
    assert!(!mnt.join("j").exists(), "a refused run created its journal directory");
    assert!(declared(&img) == before, "the declared ranges changed");
}

/// A loop device with a pending journal is detached and another file of the
/// same size attached at the same path: restore refuses it (backing file and
/// fingerprint differ), writes nothing, keeps the journal. The right file,
/// attached under another number, is found by `restore TARGET` and restored.
#[test]
fn a_journal_is_not_restored_onto_another_device_at_the_same_path() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let mine = random_file(dir.path(), "mine.img", 16 << 20, 23);
    let theirs = random_file(dir.path(), "theirs.img", 16 << 20, 24);
    let original = sha(&mine);
    let jdir = dir.path().join("j");
    let j = {
        let dev = LoopDevice::attach(&mine, None);
        let j = crashed_journal(dev.as_str(), &jdir, 10);
        assert_ne!(sha(&mine), original, "the crash left the pattern on it");
        let node = dev.path.clone();
        drop(dev);
        // The same node, now over another file.
        let out = Command::new("losetup").arg(&node).arg(&theirs).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let again = LoopDevice { path: node };
        let theirs_before = sha(&theirs);
        for what in [j.as_path(), again.path.as_path()] {
            let out = restore(what, &jdir, &[]).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            // By journal: where its bytes are now; by target: what differs.
            let named = if what == j.as_path() {
                err.contains(mine.to_str().unwrap())
            } else {
                err.contains("fingerprint")
            };
            assert!(named && err.contains("--force"), "{err}");
            assert_eq!(sha(&theirs), theirs_before, "the other file is untouched");
            assert_eq!(journals(&jdir).len(), 1, "journal kept");
        }
        j
    };
    // Attached again under whatever number is free: found by its file.
    let back = LoopDevice::attach(&mine, None);
    restore(&back.path, &jdir, &[]).assert().success();
    assert_eq!(sha(&mine), original);
    assert!(!j.exists());
}
