//! One writer per set of bytes. A block device is claimed with O_EXCL, which
//! the kernel refuses while it or a partition is mounted, held by
//! device-mapper or md, or opened exclusively by another program (another
//! flashlab run among them). A regular file has no such check, and the same
//! bytes are also reachable through every loop device over it; so a writing
//! run resolves the target's aliases (a file's loop devices, a loop device's
//! backing file and that file's other loop devices), refuses when any of them
//! is mounted or in use, and holds an exclusive lock on all of them (O_EXCL on
//! each device, flock on each file) until it has restored the data. A
//! restore takes the same claim.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::SafetyError;
use crate::device::stack::{self, Aliases, FileKey, Held};
use crate::device::{self, sysfs::Host};

/// Held locks: dropped when the run (and its restore) is over.
#[derive(Debug)]
pub struct Claim {
    _held: Vec<File>,
    pub aliases: Aliases,
}

fn in_use(path: &Path, what: String) -> SafetyError {
    SafetyError::InUse {
        target: path.display().to_string(),
        what,
    }
}

/// What uses a block device (mounts, swap, holders), as text; empty when
/// nothing does.
pub fn users_of(dev: &Path) -> Vec<String> {
    let Ok(i) = device::identify(&Host::system(), dev, 0, 512, 512) else {
        return Vec::new();
    };
    let mut u: Vec<String> = i
        .mounts
        .iter()
        .map(|m| format!("{} is mounted on {}", m.source, m.mount_point))
        .collect();
    u.extend(i.swaps.iter().map(|s| format!("{s} is swap")));
    u.extend(i.holders.iter().map(|h| format!("{} is held by {h}", dev.display())));
    u
}

/// Processes holding any alias open for writing, seen again on each of
/// several scans over about a second. Tools that scan devices (`losetup`,
/// `blkid`, udev) open them read-write for an instant; they are not users,
/// and refusing because one passed by would make two runs on two different
/// devices refuse each other at random.
fn persistent_writers(host: &Host, aliases: &Aliases) -> Vec<String> {
    let scan = || {
        let mut w = Vec::new();
        for &(ma, mi) in aliases.target_devices.iter().take(1).chain(&aliases.loop_devices) {
            w.extend(stack::writers_of(host, Held::Device(ma, mi)));
        }
        for &(_, key) in &aliases.files {
            w.extend(stack::writers_of(host, Held::File(key)));
        }
        w.sort();
        w.dedup();
        w
    };
    let mut held_by = scan();
    for _ in 0..5 {
        if held_by.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let again = scan();
        held_by.retain(|w| again.contains(w));
    }
    held_by
}

/// Claim the target at `path` and all its aliases for writing, or say what
/// uses them. The target itself (when a block device) is claimed by its own
/// O_EXCL open; this claims everything else.
pub fn claim(path: &Path) -> Result<Claim, SafetyError> {
    let host = Host::system();
    let aliases = Aliases::of(&host, path);
    // Another process writing the same bytes (a VM on the image, fuse2fs
    // serving it, a dd onto the card) is as much a user as a mount.
    let held_by = persistent_writers(&host, &aliases);
    if !held_by.is_empty() {
        return Err(in_use(path, format!("open for writing by {}", held_by.join(", "))));
    }
    let mut held = Vec::new();
    for l in &aliases.loops {
        let users = users_of(l);
        if !users.is_empty() {
            return Err(in_use(
                path,
                format!("{} shows the same bytes and {}", l.display(), users.join(", ")),
            ));
        }
        match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL | libc::O_CLOEXEC)
            .open(l)
        {
            Ok(f) => held.push(f),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                return Err(in_use(
                    path,
                    format!(
                        "{} shows the same bytes and is open exclusively by another program (another flashlab run?)",
                        l.display()
                    ),
                ));
            }
            // A loop device that vanished meanwhile shows nothing any more.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(in_use(path, format!("{} cannot be claimed: {e}", l.display()))),
        }
    }
    for &(ref file, key) in &aliases.files {
        if let Some(point) = stack::mounts_of_file(&host, key).first() {
            return Err(in_use(path, format!("{} is mounted on {point}", file.display())));
        }
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(file)
            .map_err(|e| in_use(path, format!("{} cannot be locked: {e}", file.display())))?;
        match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => held.push(f),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                return Err(in_use(
                    path,
                    format!("{} is locked by another flashlab run", file.display()),
                ));
            }
            Err(e) => {
                return Err(in_use(
                    path,
                    format!("{} cannot be locked: {}", file.display(), std::io::Error::from(e)),
                ));
            }
        }
    }
    Ok(Claim { _held: held, aliases })
}

/// Refuse a journal directory whose filesystem rests, through any stack of
/// partitions, loop devices and volumes, on the target or one of its aliases:
/// restoring would need the bytes being restored.
pub fn check_journal_dir_off_target(dir: &Path, target: &Path, aliases: &Aliases) -> Result<(), SafetyError> {
    let host = Host::system();
    // The directory may not exist yet: judge where it would be created.
    let mut dir = dir;
    while !dir.exists()
        && let Some(parent) = dir.parent()
    {
        dir = parent;
    }
    let under = stack::device_of_path(&host, dir)
        .map(|(ma, mi)| stack::underlying(&host, ma, mi))
        .unwrap_or_default();
    let on_device = under
        .devices
        .iter()
        .any(|d| aliases.target_devices.contains(d) || aliases.loop_devices.contains(d));
    let on_file = under.files.iter().any(|k| aliases.files.iter().any(|(_, f)| f == k));
    // A FUSE filesystem (fuse2fs IMAGE DIR) names its image as the source.
    let fuse_on_file = stack::mount_source(&host, dir)
        .and_then(|s| FileKey::of(&s))
        .is_some_and(|k| aliases.files.iter().any(|(_, f)| *f == k));
    if on_device || on_file || fuse_on_file {
        return Err(SafetyError::JournalDir {
            dir: dir.display().to_string(),
            why: format!(
                "it is on {} itself (its filesystem rests on the target's bytes); choose a directory on another device",
                target.display()
            ),
        });
    }
    Ok(())
}
