//! An output (`report -o`, `probe --html`) is renamed over its path, so it
//! must never replace a file in use: the backing file of a loop device
//! (mounted or not), an active swap file, a file another process holds open
//! for writing. Each is refused with `error:` and `hint:`, exit 2, the
//! file's bytes and inode as they were and no temporary file left beside
//! it. Each of these was replaced before.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::sha;
use crate::support::{LoopDevice, Mounted, flashlab, random_file, require_loop_devices};

/// A stored run to render: `align sim:demo --json`, in `dir`.
fn a_run(dir: &Path) -> PathBuf {
    let out = flashlab()
        .args(["align", "sim:demo", "--json", "--no-store"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = dir.join("run.json");
    std::fs::write(&run, out.stdout).unwrap();
    run
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

/// `report RUN -o FILE` and `probe sim:demo --html FILE` both refuse FILE,
/// naming `why`; FILE keeps its bytes and inode, and nothing is left.
fn both_refuse(run: &Path, file: &Path, why: &str) {
    let before = (sha(file), std::fs::metadata(file).unwrap().ino());
    let dir = file.parent().unwrap();
    let names = names_in(dir);
    let f = file.to_str().unwrap();
    for args in [
        vec!["report", run.to_str().unwrap(), "-o", f],
        vec!["probe", "sim:demo", "--no-store", "--html", f],
    ] {
        let out = flashlab().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("error:") && err.contains("hint:"), "{args:?}: {err}");
        assert!(
            err.contains("in use") && err.contains(why),
            "{args:?} names {why:?}: {err}"
        );
        assert!(!err.contains("done"), "{args:?} refused before any step: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let after = (sha(file), std::fs::metadata(file).unwrap().ino());
        assert_eq!(after, before, "{args:?}: {f} kept its bytes and inode");
        assert_eq!(names_in(dir), names, "{args:?}: no file made or removed beside {f}");
    }
}

#[test]
fn an_output_never_replaces_the_file_behind_a_loop_device_mounted_or_not() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let run = a_run(dir.path());
    let img = random_file(dir.path(), "t.img", 16 << 20, 70);
    {
        let l = LoopDevice::attach(&img, None);
        both_refuse(&run, &img, l.as_str());
        // A filesystem on it, mounted: the image of a mounted filesystem.
        let _mnt = Mounted::ext4(&l.path, &dir.path().join("mnt"));
        both_refuse(&run, &img, "mounted on");
    }
    // Free again: the same file is an ordinary output.
    let out = flashlab()
        .args(["report", run.to_str().unwrap(), "-o", img.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&img).unwrap().starts_with("<!DOCTYPE html>"));
}

/// A child holding a file open for writing (`exec 3>>FILE`), killed on drop.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_output_never_replaces_a_file_another_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let run = a_run(dir.path());
    let log = random_file(dir.path(), "app.log", 64 << 10, 71);
    let child = Command::new("sh")
        .args(["-c", "exec 3>>\"$1\"; exec sleep 60", "sh"])
        .arg(&log)
        .spawn()
        .unwrap();
    let writer = Writer(child);
    let pid = writer.0.id();
    // Until the shell has opened it and become sleep.
    let key = std::fs::metadata(&log).unwrap().ino();
    let until = Instant::now() + Duration::from_secs(5);
    let holds = || {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        comm.trim() == "sleep"
            && std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|d| {
                    d.flatten()
                        .any(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.ino() == key))
                })
                .unwrap_or(false)
    };
    while !holds() {
        assert!(Instant::now() < until, "the writer never opened {}", log.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    both_refuse(&run, &log, &format!("open or mapped for writing by sleep (pid {pid})"));
}

/// An active swap file, swapped off on drop.
struct Swap(PathBuf);

impl Drop for Swap {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
    }
}

#[test]
fn an_output_never_replaces_an_active_swap_file() {
    require_loop_devices!();
    // On a real disk (/var/tmp): swap on tmpfs is refused.
    let dir = tempfile::Builder::new()
        .prefix("flashlab-swap")
        .tempdir_in("/var/tmp")
        .unwrap();
    let run = a_run(dir.path());
    let file = dir.path().join("swapfile");
    std::fs::write(&file, vec![0u8; 16 << 20]).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mk = Command::new("mkswap").arg(&file).output();
    let Ok(mk) = mk else {
        crate::support::skip("mkswap is not installed (Debian package util-linux)");
        return;
    };
    assert!(mk.status.success(), "mkswap: {}", String::from_utf8_lossy(&mk.stderr));
    let on = Command::new("swapon").arg(&file).output().unwrap();
    if !on.status.success() {
        crate::support::skip(&format!(
            "swapon refused a swap file here: {}",
            String::from_utf8_lossy(&on.stderr).trim()
        ));
        return;
    }
    let _swap = Swap(file.clone());
    both_refuse(&run, &file, "active swap");
}

/// An output never replaces a file the command reads or keeps: the
/// results store (`probe --db S --html S`, where the store does not exist
/// yet, and `report 1 --db S -o S`) or the run document a report reads.
/// Each replaced it before, with exit 0: the store's runs were lost.
#[test]
fn an_output_never_replaces_the_store_or_a_run_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let in_dir = |args: &[&str]| {
        let mut c = flashlab();
        c.current_dir(dir.path()).args(args);
        c
    };
    crate::support::refused(
        &mut in_dir(&["probe", "sim:demo", "--db", "runs.sqlite", "--html", "./runs.sqlite"]),
        "./runs.sqlite is the results store this run is kept in",
    );
    assert_eq!(names_in(dir.path()), Vec::<String>::new(), "nothing made");
    let out = in_dir(&["align", "sim:demo", "--db", "runs.sqlite"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = a_run(dir.path());
    let (kept, read) = (sha(&store), sha(&run));
    crate::support::refused(
        &mut in_dir(&["report", "1", "--db", "runs.sqlite", "-o", store.to_str().unwrap()]),
        "is the results store the runs come from",
    );
    crate::support::refused(
        &mut in_dir(&["report", "run.json", "--db", "runs.sqlite", "-o", "run.json"]),
        "run.json is a run document this report reads",
    );
    assert_eq!((sha(&store), sha(&run)), (kept, read));
    assert_eq!(names_in(dir.path()), ["run.json", "runs.sqlite"]);
}
