//! What a running emulation made, recorded so that one killed with SIGKILL
//! is cleaned up by the next (`flashlab emulate` or `emulate --cleanup`):
//! its loop device, its FUSE mount and the mount point, and only those.
//!
//! A dead daemon's mount answers every request with EIO; a stopped one
//! (SIGSTOP, Ctrl-Z, a debugger) hangs them in uninterruptible sleep, where
//! no signal reaches the waiting programs. The way out is to abort its FUSE
//! connection, found by the mount's device number
//! (`docs/notes/fuse-loop-path.md`, "stopped daemon"). A live
//! emulation is ended only on the user's word (`emulate --cleanup --force
//! PID`), and only connections of mounts recorded here, under the name
//! every emulation mounts with, are aborted.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::identify::emulated::{self, Record, alive, records, state};
use crate::identify::sysfs::Roots;

use super::{EmulateError, failed};

/// This emulation's record and mount point.
pub struct State {
    pub mountpoint: PathBuf,
    file: PathBuf,
    record: Record,
}

impl State {
    /// The record of this emulation, serving `spec` at `time_scale`, in
    /// `dir` (`Places::emulations`).
    pub fn create(dir: &Path, spec: &str, time_scale: f64) -> Result<State, EmulateError> {
        let pid = std::process::id();
        let mountpoint = dir.join(format!("{pid}.mnt"));
        std::fs::create_dir_all(&mountpoint).map_err(|e| {
            failed(
                format!("cannot make the mount point {}: {e}", mountpoint.display()),
                "check that /run is writable",
            )
        })?;
        let s = State {
            file: dir.join(format!("{pid}.json")),
            record: Record {
                pid,
                mountpoint: mountpoint.clone(),
                loop_device: None,
                spec: Some(spec.to_string()),
                time_scale: Some(time_scale),
            },
            mountpoint,
        };
        s.save()?;
        Ok(s)
    }

    fn save(&self) -> Result<(), EmulateError> {
        let text = serde_json::to_string(&self.record).expect("a record serialises");
        let tmp = self.file.with_extension("json.tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &self.file))
            .map_err(|e| {
                failed(
                    format!("cannot record the emulation in {}: {e}", self.file.display()),
                    "check /run",
                )
            })
    }

    pub fn record_loop(&mut self, dev: &str) -> Result<(), EmulateError> {
        self.record.loop_device = Some(dev.to_string());
        self.save()
    }

    pub fn remove(&self) {
        let _ = std::fs::remove_dir(&self.mountpoint);
        let _ = std::fs::remove_file(&self.file);
    }
}

/// A live emulation that cannot answer: its process is stopped, so every
/// request to its device waits, in uninterruptible sleep, until it runs again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub pid: u32,
    pub device: Option<String>,
}

impl Stopped {
    /// What is wrong, for an `error:` line.
    pub fn why(&self) -> String {
        let dev = self.device.as_deref().unwrap_or("its device");
        format!(
            "emulation {} ({dev}) is stopped (SIGSTOP, Ctrl-Z or a debugger): every read and write of {dev} waits \
             until it runs again",
            self.pid
        )
    }

    /// The two ways out, as commands.
    pub fn fix(&self) -> String {
        format!(
            "resume it with `kill -CONT {pid}`, or end it and fail its waiting I/O with `sudo flashlab emulate \
             --cleanup --force {pid}`",
            pid = self.pid
        )
    }
}

/// The emulations recorded in `dir` whose process is alive but stopped
/// (`T`, or `t` under a debugger), found without touching their devices.
pub fn stopped(dir: &Path) -> Vec<Stopped> {
    records(dir)
        .into_iter()
        .filter(|(_, r)| is_stopped(r.pid))
        .map(|(_, r)| Stopped {
            pid: r.pid,
            device: r.loop_device,
        })
        .collect()
}

/// The stopped emulation serving the block device at `dev`, if any: the
/// same device number as its recorded loop device, which still shows its
/// card. Nothing is read from the device (a read would hang).
pub fn stopped_serving(dev: &Path) -> Option<Stopped> {
    let rec = emulated::record_of(&Roots::system(), dev)?;
    is_stopped(rec.pid).then_some(Stopped {
        pid: rec.pid,
        device: rec.loop_device,
    })
}

/// Whether process `pid` is a flashlab, alive and stopped.
fn is_stopped(pid: u32) -> bool {
    alive(pid) && matches!(state(pid), Some('T' | 't'))
}

/// Whether loop device `dev` still shows a file in the emulation's mount.
fn ours(dev: &str, mountpoint: &Path) -> bool {
    emulated::shows_mount(&Roots::system(), dev, mountpoint)
}

/// The id of the FUSE connection of the emulation mounted at `mountpoint`.
fn fuse_connection(mountpoint: &Path) -> Option<u64> {
    emulated::fuse_connection(&Roots::system(), mountpoint)
}

/// Whether process `pid` has exited: gone, or a zombie (dead, its files
/// closed, waiting for its parent to read its status).
fn exited(pid: u32) -> bool {
    matches!(state(pid), None | Some('Z' | 'X'))
}

/// `losetup -d DEV`.
pub fn detach(dev: &str) -> Result<(), String> {
    let out = Command::new("losetup")
        .args(["-d", dev])
        .output()
        .map_err(|e| format!("cannot run losetup -d {dev}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "losetup -d {dev}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn mounted(mountpoint: &Path) -> bool {
    fuse_connection(mountpoint).is_some()
}

/// Abort FUSE connection `id`: every request waiting on it, and every
/// later one, fails with EIO. Through /sys/fs/fuse/connections; where the
/// fusectl filesystem is not mounted there, through a mount of our own made
/// for the moment; failing that, a forced unmount of `mountpoint`, which
/// aborts the connection too (FUSE's `umount_begin`). What was done.
fn abort(id: u64, mountpoint: &Path) -> Result<String, String> {
    let write = |dir: &Path| std::fs::write(dir.join(id.to_string()).join("abort"), "1");
    if write(Path::new("/sys/fs/fuse/connections")).is_ok() {
        return Ok(format!(
            "aborted its FUSE connection {id} (what waited on it failed with EIO)"
        ));
    }
    // Beside the emulation's mount point, in the emulations' directory.
    let ctl = mountpoint
        .parent()
        .unwrap_or(Path::new("/run"))
        .join(format!("fusectl.{}", std::process::id()));
    let mut why = format!("cannot make {}", ctl.display());
    if std::fs::create_dir_all(&ctl).is_ok() {
        let flags = rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NODEV;
        match rustix::mount::mount("fusectl", &ctl, "fusectl", flags, None) {
            Ok(()) => {
                let done = write(&ctl);
                let _ = rustix::mount::unmount(&ctl, rustix::mount::UnmountFlags::DETACH);
                let _ = std::fs::remove_dir(&ctl);
                match done {
                    Ok(()) => {
                        return Ok(format!(
                            "aborted its FUSE connection {id} (what waited on it failed with EIO)"
                        ));
                    }
                    Err(e) => why = format!("cannot abort FUSE connection {id}: {e}"),
                }
            }
            Err(e) => {
                let _ = std::fs::remove_dir(&ctl);
                why = format!("cannot mount fusectl: {e}");
            }
        }
    }
    // The unmount itself then fails while the loop device holds the card's
    // file; FUSE aborted the connection before that check.
    match rustix::mount::unmount(mountpoint, rustix::mount::UnmountFlags::FORCE) {
        Err(e) if e != rustix::io::Errno::BUSY => Err(format!("{why}; a forced unmount failed too: {e}")),
        _ => Ok(format!("aborted its FUSE connection {id} by a forced unmount ({why})")),
    }
}

/// Unmount `mountpoint` if a FUSE filesystem is mounted there; lazily when
/// something still holds it (a loop device whose detach waits for its last
/// user). What was done.
pub fn unmount(mountpoint: &Path) -> Result<String, String> {
    if !mounted(mountpoint) {
        return Ok(format!("{} was not mounted", mountpoint.display()));
    }
    let shown = mountpoint.display();
    match rustix::mount::unmount(mountpoint, rustix::mount::UnmountFlags::empty()) {
        Ok(()) => Ok(format!("unmounted {shown}")),
        Err(_) => rustix::mount::unmount(mountpoint, rustix::mount::UnmountFlags::DETACH)
            .map(|()| format!("unmounted {shown} lazily (it goes when its last user lets go)"))
            .map_err(|e| format!("cannot unmount {shown}: {e}")),
    }
}

/// End what a recorded emulation left, in the order that cannot hang:
/// abort its FUSE connection (a stopped daemon would hang the loop device
/// and anything waiting on it), then `kill` its process when asked (it must
/// not wake up later to detach a loop device that is no longer its own),
/// detach its loop device if that still shows its card, unmount, remove
/// the record. What was done.
fn end(file: &Path, rec: &Record, kill: bool) -> Vec<String> {
    let mut what = Vec::new();
    if let Some(id) = fuse_connection(&rec.mountpoint) {
        what.push(abort(id, &rec.mountpoint).unwrap_or_else(|e| e));
    }
    if kill && alive(rec.pid) {
        let sent = rustix::process::Pid::from_raw(rec.pid as i32)
            .ok_or(rustix::io::Errno::SRCH)
            .and_then(|p| rustix::process::kill_process(p, rustix::process::Signal::KILL));
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !exited(rec.pid) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        what.push(match (sent, exited(rec.pid)) {
            (Ok(()), true) => "killed it (SIGKILL)".to_string(),
            (Err(e), _) => format!("cannot kill process {}: {e}", rec.pid),
            (Ok(()), false) => format!("process {} has not ended 5 s after SIGKILL", rec.pid),
        });
    }
    if let Some(dev) = &rec.loop_device
        && ours(dev, &rec.mountpoint)
    {
        match detach(dev) {
            Ok(()) => what.push(format!("detached {dev}")),
            Err(e) => what.push(e),
        }
    }
    what.push(unmount(&rec.mountpoint).unwrap_or_else(|e| e));
    let _ = std::fs::remove_dir(&rec.mountpoint);
    let _ = std::fs::remove_file(file);
    what
}

/// Clean up after every recorded emulation whose process is gone: abort its
/// FUSE connection, detach its loop device if that still reads from its
/// mount, unmount, remove the record. What was done, one line per
/// emulation.
pub fn clean_stale(dir: &Path) -> Vec<String> {
    records(dir)
        .into_iter()
        .filter(|(_, r)| !alive(r.pid))
        .map(|(file, rec)| {
            let what = end(&file, &rec, false);
            std::iter::once(format!("process {}", rec.pid))
                .chain(what)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect()
}

/// What `emulate --cleanup` did, and the live emulations it left alone
/// that hang their devices.
pub struct Cleanup {
    pub done: Vec<String>,
    pub stopped: Vec<Stopped>,
}

/// `emulate --cleanup`: what [`clean_stale`] did, and [`stopped`].
pub fn cleanup(dir: &Path) -> Result<Cleanup, EmulateError> {
    super::preflight()?;
    Ok(Cleanup {
        done: clean_stale(dir),
        stopped: stopped(dir),
    })
}

/// `emulate --cleanup --force PID`: end emulation `pid`, alive or not,
/// stopped or not, on the user's word: abort its FUSE connection (what
/// waits on its device fails with EIO), kill it, detach its loop device,
/// unmount, remove its record. Refused for a process that is not a
/// recorded flashlab emulation. What was done.
pub fn force(dir: &Path, pid: u32) -> Result<String, EmulateError> {
    super::preflight()?;
    let Some((file, rec)) = records(dir).into_iter().find(|(_, r)| r.pid == pid) else {
        return Err(super::refused(
            format!(
                "process {pid} is not a flashlab emulation (no record of it in {})",
                dir.display()
            ),
            "`sudo flashlab emulate --cleanup` names each stopped emulation with the command that ends it",
        ));
    };
    let live = alive(pid);
    let what = end(&file, &rec, live);
    let state = if live { "" } else { " (no longer running)" };
    Ok(format!("emulation {pid}{state}: {}", what.join(", ")))
}
