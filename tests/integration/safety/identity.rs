//! The same bytes under another name (a hostile tester's reproductions): a pending
//! journal found under another loop number and through a hard link;
//! journals over the same bytes restored newest first whatever their file
//! names; a loop device over a loop device, loop devices over a deleted file
//! and over a file named "... (deleted)", a shared writable mapping; a loop
//! device's journal restored onto its backing file once the loop is gone.
//! Each test failed before the identity of the bytes replaced paths.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::assert::OutputAssertExt;
use predicates::prelude::*;

use super::{crashed_journal, journals, restore, sha, write_pattern};
use crate::support::{LoopDevice, Mounted, random_file, require_loop_devices};

/// Remount read-only, so the filesystem writes nothing more to the bytes
/// the test compares.
fn remount_ro(dir: &Path) {
    let ok = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "remount ro");
}

fn refused_as_pending(target: &str, jdir: &Path) {
    let out = write_pattern(target, jdir, &[]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{target}: {err}");
    assert!(
        err.contains("pending journal") && err.contains("flashlab restore"),
        "{target}: {err}"
    );
}

#[test]
fn a_pending_journal_is_found_under_another_loop_number() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let g = random_file(dir.path(), "g.img", 16 << 20, 51);
    let dummy = random_file(dir.path(), "dummy.img", 1 << 20, 52);
    let original = sha(&g);
    let jdir = dir.path().join("j");
    {
        let lx = LoopDevice::attach(&g, None);
        // Killed after both ranges were written.
        crashed_journal(lx.as_str(), &jdir, 10);
    }
    // The freed number goes to another file; ours comes back under a new one.
    let _other = LoopDevice::attach(&dummy, None);
    let ly = LoopDevice::attach(&g, None);
    let crashed = sha(&g);
    assert_ne!(crashed, original, "the crash left the pattern");
    for t in [ly.as_str(), g.to_str().unwrap()] {
        refused_as_pending(t, &jdir);
        assert_eq!(sha(&g), crashed, "{t}: nothing written");
        assert_eq!(journals(&jdir).len(), 1, "{t}: no second journal");
    }
    restore(&ly.path, &jdir, &[]).assert().success();
    assert_eq!(sha(&g), original);
    assert!(journals(&jdir).is_empty());
}

#[test]
fn a_pending_journal_is_found_through_a_hard_link() {
    let dir = tempfile::tempdir().unwrap();
    let e2 = random_file(dir.path(), "e2.img", 16 << 20, 53);
    let e = dir.path().join("e.img");
    std::fs::hard_link(&e2, &e).unwrap();
    let original = sha(&e2);
    let jdir = dir.path().join("j");
    crashed_journal(e2.to_str().unwrap(), &jdir, 10);
    let crashed = sha(&e);
    refused_as_pending(e.to_str().unwrap(), &jdir);
    assert_eq!(sha(&e), crashed, "nothing written");
    restore(&e, &jdir, &[]).assert().success();
    assert_eq!(sha(&e2), original);
}

/// Two journals over the same bytes (a crash, then another run whose
/// journal went elsewhere and crashed too): the second run's "originals"
/// are the first run's pattern, so the first (older) journal must land
/// last. Named so that file-name order is the wrong order.
#[test]
fn journals_over_the_same_bytes_restore_newest_first_whatever_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "t.img", 16 << 20, 54);
    let original = sha(&f);
    let (jdir, aside) = (dir.path().join("j"), dir.path().join("aside"));
    std::fs::create_dir_all(&aside).unwrap();
    let first = crashed_journal(f.to_str().unwrap(), &jdir, 10);
    let kept = aside.join("a.fljournal");
    std::fs::rename(&first, &kept).unwrap();
    let second = crashed_journal(f.to_str().unwrap(), &jdir, 10);
    let (a, b) = (jdir.join("a.fljournal"), jdir.join("b.fljournal"));
    std::fs::rename(&second, &b).unwrap();
    std::fs::rename(&kept, &a).unwrap();
    let crashed = sha(&f);
    // The older journal alone would be overwritten by the newer one's
    // "originals" afterwards: refused, naming the newer.
    let out = restore(&a, &jdir, &[]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("b.fljournal") && err.contains("newer"), "{err}");
    assert_eq!(sha(&f), crashed);
    // By target: newest first, then the oldest, which holds the original.
    let out = restore(&f, &jdir, &["--json"]).output().unwrap();
    let v = crate::support::document(&out, 0, "restore by target");
    let order: Vec<&str> = v["restored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["journal"].as_str().unwrap())
        .collect();
    assert!(
        order.len() == 2 && order[0].ends_with("b.fljournal") && order[1].ends_with("a.fljournal"),
        "{order:?}"
    );
    assert_eq!(sha(&f), original, "zero bytes lost");
}

/// m.img, a loop device over it, a loop device over that one, mounted: the
/// file, the lower loop device and a second loop over the file are all the
/// mounted filesystem's bytes, and a journal directory inside it rests on
/// them.
#[test]
fn a_loop_over_a_loop_is_an_alias_for_claims_and_journal_placement() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let m = random_file(dir.path(), "m.img", 64 << 20, 55);
    let lm = LoopDevice::attach(&m, None);
    let ll = LoopDevice::attach(&lm.path, None);
    let mnt = Mounted::ext4(&ll.path, &dir.path().join("mnt"));
    std::fs::create_dir_all(mnt.dir.join("journals")).unwrap();
    remount_ro(&mnt.dir);
    let second = LoopDevice::attach(&m, None);
    let before = sha(&m);
    let outside = dir.path().join("j");
    for (t, jdir) in [
        (m.to_str().unwrap(), mnt.dir.join("journals")),
        (m.to_str().unwrap(), outside.clone()),
        (lm.as_str(), outside.clone()),
        (second.as_str(), outside.clone()),
    ] {
        write_pattern(t, &jdir, &[])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("is mounted on").and(predicate::str::contains("hint:")));
        assert!(journals(&outside).is_empty(), "{t}: no journal");
    }
    assert_eq!(sha(&m), before, "nothing written");
    // `info` on the file names the mount through both loop devices.
    let v = crate::support::json(&["info", m.to_str().unwrap()]);
    assert_eq!(v["info"]["in_use"], true);
    assert!(
        v["info"]["in_use_by"].to_string().contains(mnt.dir.to_str().unwrap()),
        "{v}"
    );
    // The journal-directory check alone (the second line of defence behind
    // the in-use check): the directory rests on the file's bytes.
    use flashlab::identify::stack::Stack;
    use flashlab::identify::sysfs::Roots;
    let aliases = Stack::read(&Roots::system()).aliases(&m);
    let e = flashlab::safety::claim::check_journal_dir_off_target(&mnt.dir.join("journals"), &m, &aliases)
        .unwrap_err()
        .to_string();
    assert!(e.contains("itself"), "{e}");
    assert!(
        flashlab::safety::claim::check_journal_dir_off_target(&outside, &m, &aliases).is_ok(),
        "a directory elsewhere is fine"
    );
}

/// Two loop devices over one file, the file deleted, one loop mounted: the
/// other is the same bytes (the kernel keeps the deleted file's device and
/// inode). And a file whose name really ends in " (deleted)".
#[test]
fn loop_devices_over_a_deleted_file_and_a_deleted_looking_name_are_aliases() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    for (name, delete) in [("del.img", true), ("x (deleted)", false)] {
        let f = random_file(dir.path(), name, 32 << 20, 56);
        let l1 = LoopDevice::attach(&f, None);
        let l2 = LoopDevice::attach(&f, None);
        let mnt = Mounted::ext4(&l2.path, &dir.path().join(format!("mnt-{delete}")));
        remount_ro(&mnt.dir);
        if delete {
            std::fs::remove_file(&f).unwrap();
        }
        let before = sha(&l1.path);
        let mut targets = vec![l1.as_str().to_string()];
        if !delete {
            targets.push(f.to_str().unwrap().to_string());
        }
        for t in &targets {
            write_pattern(t, &dir.path().join("j"), &[])
                .assert()
                .code(2)
                .stderr(predicate::str::contains("is mounted on"));
            let v = crate::support::json(&["info", t]);
            assert_eq!(v["info"]["in_use"], true, "{name}: {t}: {v}");
        }
        assert_eq!(sha(&l1.path), before, "{name}: nothing written");
        assert!(journals(&dir.path().join("j")).is_empty());
    }
}

/// A child process holding a shared writable mapping of `f`, its file
/// descriptor closed: it can write the file, and no /proc/PID/fd shows it.
struct Mapper(libc::pid_t);

impl Mapper {
    fn start(f: &Path) -> Mapper {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new().read(true).write(true).open(f).unwrap();
        let len = 1 << 20;
        // SAFETY: a fresh shared mapping of 1 MiB of an open file of 16 MiB;
        // the pointer is only passed back to munmap below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        drop(file);
        // SAFETY: the child calls only async-signal-safe functions (sleep)
        // until it is killed; it inherits the mapping and never touches it.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            loop {
                // SAFETY: sleep is async-signal-safe.
                unsafe { libc::sleep(60) };
            }
        }
        // SAFETY: `p` is the mapping made above, of `len` bytes; the parent
        // no longer needs it (the child keeps its own copy of the mapping).
        unsafe { libc::munmap(p, len) };
        Mapper(pid)
    }
}

impl Drop for Mapper {
    fn drop(&mut self) {
        // SAFETY: signalling and reaping the child this test forked.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }
}

#[test]
fn a_process_writing_through_a_shared_mapping_is_a_user() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "mapped.img", 16 << 20, 57);
    let jdir = dir.path().join("j");
    let before = sha(&f);
    {
        let _m = Mapper::start(&f);
        write_pattern(f.to_str().unwrap(), &jdir, &[])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("mapped for writing"));
        let v = crate::support::json(&["info", f.to_str().unwrap()]);
        assert_eq!(v["info"]["in_use"], true, "{v}");
        assert_eq!(sha(&f), before);
    }
    // Once it is gone, the same run goes ahead and gives every byte back.
    write_pattern(f.to_str().unwrap(), &jdir, &[]).assert().success();
    assert_eq!(sha(&f), before);
}

/// The loop device a crashed run wrote through is gone: its journal
/// restores onto the backing file (the same bytes at the same offsets)
/// without --force, and `restore JOURNAL` says where to go.
#[test]
fn a_loop_devices_journal_restores_onto_its_backing_file() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "b.img", 16 << 20, 58);
    let original = sha(&f);
    let jdir = dir.path().join("j");
    let j: PathBuf = {
        let l = LoopDevice::attach(&f, None);
        crashed_journal(l.as_str(), &jdir, 10)
    };
    assert_ne!(sha(&f), original);
    // By journal: its loop device no longer shows the bytes; pointed at the file.
    let out = restore(&j, &jdir, &[]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(f.to_str().unwrap()), "{err}");
    restore(&f, &jdir, &[]).assert().success();
    assert_eq!(sha(&f), original);
    assert!(journals(&jdir).is_empty());
}

/// Every name of `f`'s bytes shows `want` once the kernel has written back
/// what it holds (`sync`): the file, and each loop device read through its
/// own page cache (`[(loop, its offset in f)]`).
fn every_name_shows(f: &Path, want: &[u8], loops: &[(&LoopDevice, u64)]) {
    assert!(Command::new("sync").status().unwrap().success());
    let file = std::fs::read(f).unwrap();
    let diff = |got: &[u8]| got.iter().zip(want).filter(|(a, b)| a != b).count();
    assert_eq!(diff(&file), 0, "{}: bytes differ from the original", f.display());
    for (l, offset) in loops {
        let got = std::fs::read(&l.path).unwrap();
        let want = &want[*offset as usize..];
        let n = got.iter().zip(want).filter(|(a, b)| a != b).count();
        assert_eq!(n, 0, "{}: {n} bytes differ from the file's original", l.as_str());
    }
}

/// A run through C (a loop over loop A over f) is killed: its pattern sits
/// dirty in A's page cache, which C keeps open. A restore through f itself
/// wrote and verified f, and then the kernel wrote A's dirty pages back over
/// it (a hostile tester's find: 8 MiB lost after "verified"). The restore
/// now flushes every alias before writing and drops their caches after.
#[test]
fn a_restore_through_the_file_survives_a_crash_through_a_loop_over_a_loop() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "ll.img", 16 << 20, 59);
    let original = std::fs::read(&f).unwrap();
    let jdir = dir.path().join("j");
    let a = LoopDevice::attach(&f, None);
    let c = LoopDevice::attach(&a.path, None);
    crashed_journal(c.as_str(), &jdir, 10);
    restore(&f, &jdir, &[]).assert().success();
    every_name_shows(&f, &original, &[(&a, 0), (&c, 0)]);
    assert!(journals(&jdir).is_empty());
}

/// A refused restore through C read D's fingerprint blocks, pattern and
/// all, into A's page cache; after the restore through D put f back, A and
/// C still showed the pattern (and an ordinary write through A later put it
/// back into f). Every alias's cache is dropped after a restore.
#[test]
fn no_alias_shows_the_pattern_after_a_restore_through_another_name() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "st.img", 16 << 20, 60);
    let original = std::fs::read(&f).unwrap();
    let jdir = dir.path().join("j");
    let a = LoopDevice::attach(&f, None);
    let c = LoopDevice::attach(&a.path, None);
    let d = LoopDevice::attach_with(&f, None, 1 << 20);
    crashed_journal(d.as_str(), &jdir, 10);
    // Through C: D's bytes start 1 MiB into it, so its journal is not C's.
    let out = restore(&c.path, &jdir, &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    restore(&d.path, &jdir, &[]).assert().success();
    every_name_shows(&f, &original, &[(&a, 0), (&c, 0), (&d, 1 << 20)]);
}

/// A crashed run's journal went to one directory, the next run's to
/// another: the second run is refused (the first one's journal is found by
/// the pointer every journal leaves in the default directory), and
/// restoring by target takes both directories' journals newest first.
#[test]
fn a_pending_journal_in_another_journal_directory_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "two.img", 16 << 20, 61);
    let original = sha(&f);
    let (j1, j2) = (dir.path().join("j1"), dir.path().join("j2"));
    crashed_journal(f.to_str().unwrap(), &j1, 10);
    let crashed = sha(&f);
    refused_as_pending(f.to_str().unwrap(), &j2);
    assert_eq!(sha(&f), crashed, "nothing written");
    assert!(journals(&j2).is_empty(), "no second journal");
    // `restore` with either directory (or none) sees it.
    for d in [&j1, &j2] {
        let out = restore(&f, d, &["--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(sha(&f), original, "zero bytes lost");
        crashed_journal(f.to_str().unwrap(), &j1, 10);
    }
    let out = crate::support::flashlab().args(["restore", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed: Vec<&str> = v["pending"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["journal"].as_str())
        .collect();
    assert!(listed.iter().any(|j| j.starts_with(j1.to_str().unwrap())), "{listed:?}");
    restore(&f, &j2, &[]).assert().success();
    assert_eq!(sha(&f), original);
}
