//! What a running emulation made, recorded so that one killed with SIGKILL
//! is cleaned up by the next (`flashlab emulate` or `emulate --cleanup`):
//! its loop device, its FUSE mount and the mount point, and only those.
//!
//! A dead daemon's mount answers every request with EIO; a stopped one
//! hangs them, and the way out is to abort its FUSE connection, found by
//! the mount's device number (`../shared/notes/fuse-loop-path.md`, "stopped
//! daemon"). Only connections of mounts recorded here are aborted.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::{EmulateError, failed};

/// Where emulations keep their state and mount points (root only: emulate
/// refuses to run otherwise).
pub fn root_dir() -> PathBuf {
    std::env::var_os("FLASHLAB_EMULATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/flashlab/emulate"))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    pid: u32,
    mountpoint: PathBuf,
    #[serde(default)]
    loop_device: Option<String>,
}

/// This emulation's record and mount point.
pub struct State {
    pub mountpoint: PathBuf,
    file: PathBuf,
    record: Record,
}

impl State {
    pub fn create() -> Result<State, EmulateError> {
        let dir = root_dir();
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

/// Whether process `pid` is alive and a flashlab.
fn alive(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().starts_with("flashlab")))
        .unwrap_or(false)
}

/// The backing file of loop device `dev` (`/dev/loop3`), from sysfs.
fn backing_file(dev: &str) -> Option<PathBuf> {
    let name = Path::new(dev).file_name()?.to_str()?;
    let text = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(PathBuf::from(text.trim_end()))
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

/// The device number (minor) of the FUSE mount at `mountpoint`: the id of
/// its connection under /sys/fs/fuse/connections.
fn fuse_connection(mountpoint: &Path) -> Option<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = mountpoint.to_str()?;
    info.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let fstype = l.split(" - ").nth(1)?.split_whitespace().next()?;
        (f.get(4) == Some(&want) && fstype.starts_with("fuse")).then(|| f[2].split(':').nth(1).map(str::to_string))?
    })
}

fn mounted(mountpoint: &Path) -> bool {
    fuse_connection(mountpoint).is_some()
}

/// Unmount `mountpoint` if a FUSE filesystem is mounted there.
pub fn unmount(mountpoint: &Path) -> Result<(), String> {
    if !mounted(mountpoint) {
        return Ok(());
    }
    rustix::mount::unmount(mountpoint, rustix::mount::UnmountFlags::empty())
        .or_else(|_| rustix::mount::unmount(mountpoint, rustix::mount::UnmountFlags::DETACH))
        .map_err(|e| format!("cannot unmount {}: {e}", mountpoint.display()))
}

/// Clean up after every recorded emulation whose process is gone: abort its
/// FUSE connection (a stopped daemon would hang the loop device), detach
/// its loop device if that still reads from its mount, unmount, remove the
/// record. What was done, one line per emulation.
pub fn clean_stale() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(root_dir()) else {
        return Vec::new();
    };
    let mut done = Vec::new();
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(rec) = serde_json::from_str::<Record>(&text) else {
            continue;
        };
        if alive(rec.pid) {
            continue;
        }
        let mut what = vec![format!("process {}", rec.pid)];
        if let Some(id) = fuse_connection(&rec.mountpoint) {
            let abort = format!("/sys/fs/fuse/connections/{id}/abort");
            if std::fs::write(&abort, "1").is_ok() {
                what.push(format!("aborted FUSE connection {id}"));
            }
        }
        if let Some(dev) = &rec.loop_device {
            let ours = backing_file(dev).is_some_and(|b| b.starts_with(&rec.mountpoint));
            if ours {
                match detach(dev) {
                    Ok(()) => what.push(format!("detached {dev}")),
                    Err(e) => what.push(e),
                }
            }
        }
        match unmount(&rec.mountpoint) {
            Ok(()) => what.push(format!("unmounted {}", rec.mountpoint.display())),
            Err(e) => what.push(e),
        }
        let _ = std::fs::remove_dir(&rec.mountpoint);
        let _ = std::fs::remove_file(&path);
        done.push(what.join(", "));
    }
    done
}

/// `emulate --cleanup`: what [`clean_stale`] did.
pub fn cleanup() -> Result<Vec<String>, EmulateError> {
    super::preflight()?;
    Ok(clean_stale())
}
