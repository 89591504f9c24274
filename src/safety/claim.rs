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
use crate::identify::{self, sysfs::Roots};

/// Held locks: dropped when the run (and its restore) is over.
#[derive(Debug)]
pub struct Claim {
    _held: Vec<File>,
    pub aliases: Aliases,
}

impl Claim {
    /// Make every block-device name of the bytes show what is on them now.
    ///
    /// Each block device has a page cache of its own: a loop device over
    /// another one (C over A) writes through A's, and A's dirty pages reach
    /// the file whenever the kernel writes them back (up to 30 s later, or at
    /// `sync`), over anything written to the file meanwhile under another
    /// name. Clean pages go stale the same way: A shows what the file held
    /// when A last read it. So before a run or a restore writes, every
    /// alias is flushed (fsync: its dirty pages land now, not over the
    /// restored bytes), and after the bytes are back each one is flushed
    /// again and its cached pages dropped (POSIX_FADV_DONTNEED, which drops
    /// clean pages only: nothing unwritten is lost). Devices above the
    /// target go first, as their pages land in the ones below. Returns what
    /// could not be settled, as text.
    pub fn settle(&self, drop_cache: bool) -> Vec<String> {
        let mut order: Vec<&std::path::Path> = Vec::new();
        let above = self.aliases.devices().filter(|a| !a.below);
        let below = self.aliases.devices().filter(|a| a.below);
        let own = self
            .aliases
            .target
            .filter(|n| matches!(n, Node::Device { .. }))
            .and(self.aliases.target_path.as_deref());
        order.extend(above.filter_map(|a| a.path.as_deref()));
        order.extend(own);
        order.extend(below.filter_map(|a| a.path.as_deref()));
        let mut failed = Vec::new();
        for dev in order {
            let done = File::open(dev).and_then(|f| {
                f.sync_all()?;
                if drop_cache {
                    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)?;
                }
                Ok(())
            });
            match done {
                Ok(()) => {}
                // Detached meanwhile: it shows nothing any more.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => failed.push(format!("{}: {e}", dev.display())),
            }
        }
        for (file, _) in self.aliases.files() {
            if let Some(f) = file
                && let Err(e) = File::open(&f).and_then(|f| f.sync_all())
                && e.kind() != std::io::ErrorKind::NotFound
            {
                failed.push(format!("{}: {e}", f.display()));
            }
        }
        failed
    }
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
    let Ok(i) = identify::identify(&Roots::system(), dev, 0, 512, 512) else {
        return Vec::new();
    };
    let mut u: Vec<String> = i
        .related
        .mounts
        .iter()
        .map(|m| format!("{} is mounted on {}", m.source, m.mount_point))
        .collect();
    u.extend(i.related.swaps.iter().map(|s| format!("{s} is swap")));
    u.extend(
        i.related
            .holders
            .iter()
            .map(|h| format!("{} is held by {h}", dev.display())),
    );
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
    let roots = Roots::system();
    let aliases = Stack::read(&roots).aliases(path);
    // Another process writing the same bytes (a VM on the image, fuse2fs
    // serving it, a dd onto the card, a program with the file mapped) is as
    // much a user as a mount.
    let held_by = stack::persistent_writers(&roots, &aliases);
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
        let uses = stack::mounts_of_device(&roots, major, minor, node);
        if !uses.is_empty() {
            return Err(in_use(
                path,
                format!("{} shows the same bytes and {}", node.display(), uses.join(", ")),
            ));
        }
        if a.partly() {
            continue;
        }
        match open_exclusive(node) {
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
        if let Some(point) = stack::mounts_of_file(&roots, key).first() {
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

/// Open `node` with O_EXCL, trying again for
/// [`BUSY_GRACE`](crate::targets::real::BUSY_GRACE) while it is busy, as the
/// target's own exclusive open does: a killed run's io_uring holds an alias
/// for up to ~100 ms after the process is reaped (5 of 5 tries in the
/// hostile campaign, scripts/hostile.sh). A device really in use stays busy.
pub fn open_exclusive(node: &Path) -> std::io::Result<File> {
    let deadline = std::time::Instant::now() + crate::targets::real::BUSY_GRACE;
    loop {
        let r = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL | libc::O_CLOEXEC)
            .open(node);
        match r {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// Refuse a journal directory whose filesystem rests, through any stack of
/// partitions, loop devices (over files or over other loop devices) and
/// volumes, on the target's bytes: restoring would need the bytes being
/// restored.
pub fn check_journal_dir_off_target(dir: &Path, target: &Path, aliases: &Aliases) -> Result<(), SafetyError> {
    let roots = Roots::system();
    // The directory may not exist yet: judge where it would be created.
    let mut dir = dir;
    while !dir.exists()
        && let Some(parent) = dir.parent()
    {
        dir = parent;
    }
    let under = Stack::read(&roots).under_dir(dir);
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
