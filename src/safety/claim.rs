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
use crate::identify::stack::{self, Aliases, Node, Stack};
use crate::identify::{self, sysfs::Host};

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
    let Ok(i) = identify::identify(&Host::system(), dev, 0, 512, 512) else {
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

/// Claim the target at `path` and every other name of its bytes for
/// writing, or say what uses them. The target itself (when a block device)
/// is claimed by its own O_EXCL open; this claims everything else: each
/// alias block device with O_EXCL (which the kernel refuses while it is
/// mounted, held or claimed), except the whole disk of a partition (whose
/// other partitions may be mounted), which is only checked for mounts and
/// writers; each file by flock.
pub fn claim(path: &Path) -> Result<Claim, SafetyError> {
    let host = Host::system();
    let aliases = Stack::read(&host).aliases(path);
    // Another process writing the same bytes (a VM on the image, fuse2fs
    // serving it, a dd onto the card, a program with the file mapped) is as
    // much a user as a mount.
    let held_by = stack::persistent_writers(&host, &aliases);
    if !held_by.is_empty() {
        return Err(in_use(
            path,
            format!("open or mapped for writing by {}", held_by.join(", ")),
        ));
    }
    let mut held = Vec::new();
    for a in aliases.devices() {
        let Node::Device { major, minor } = a.node else {
            continue;
        };
        let Some(node) = &a.path else { continue };
        let uses = stack::mounts_of_device(&host, major, minor, node);
        if !uses.is_empty() {
            return Err(in_use(
                path,
                format!("{} shows the same bytes and {}", node.display(), uses.join(", ")),
            ));
        }
        if a.partly() {
            continue;
        }
        match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL | libc::O_CLOEXEC)
            .open(node)
        {
            Ok(f) => held.push(f),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                let users = users_of(node);
                let why = if users.is_empty() {
                    "is open exclusively by another program (another flashlab run?)".to_string()
                } else {
                    users.join(", ")
                };
                return Err(in_use(
                    path,
                    format!("{} shows the same bytes and {why}", node.display()),
                ));
            }
            // A device that vanished meanwhile shows nothing any more.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(in_use(path, format!("{} cannot be claimed: {e}", node.display()))),
        }
    }
    for (file, key) in aliases.files() {
        let shown = file.as_ref().map_or_else(
            || format!("a deleted file (inode {})", key.ino),
            |f| f.display().to_string(),
        );
        if let Some(point) = stack::mounts_of_file(&host, key).first() {
            return Err(in_use(path, format!("{shown} is mounted on {point}")));
        }
        // A deleted file has no name to lock; only its loop devices reach
        // it, and they are claimed above.
        let Some(file) = file else { continue };
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&file)
            .map_err(|e| in_use(path, format!("{shown} cannot be locked: {e}")))?;
        match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => held.push(f),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                return Err(in_use(path, format!("{shown} is locked by another flashlab run")));
            }
            Err(e) => {
                return Err(in_use(
                    path,
                    format!("{shown} cannot be locked: {}", std::io::Error::from(e)),
                ));
            }
        }
    }
    Ok(Claim { _held: held, aliases })
}

/// Refuse a journal directory whose filesystem rests, through any stack of
/// partitions, loop devices (over files or over other loop devices) and
/// volumes, on the target's bytes: restoring would need the bytes being
/// restored.
pub fn check_journal_dir_off_target(dir: &Path, target: &Path, aliases: &Aliases) -> Result<(), SafetyError> {
    let host = Host::system();
    // The directory may not exist yet: judge where it would be created.
    let mut dir = dir;
    while !dir.exists()
        && let Some(parent) = dir.parent()
    {
        dir = parent;
    }
    let under = Stack::read(&host).under_dir(dir);
    if aliases.rest_under(&under) {
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
