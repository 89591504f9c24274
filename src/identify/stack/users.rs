//! Who uses a target's bytes now: processes that can write them (a
//! descriptor open for writing or a shared writable mapping, from /proc),
//! mounts and swap on them, and a flashlab run's lock on a file.

use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::super::sysfs::Roots;
use super::{Aliases, FileKey, Node, read_trimmed};

/// What a process may hold open: a regular file by key, or a block device by
/// number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    File(FileKey),
    Device(u32, u32),
}

impl From<Node> for Held {
    fn from(n: Node) -> Held {
        match n {
            Node::Device { major, minor } => Held::Device(major, minor),
            Node::File { dev, ino } => Held::File(FileKey { dev, ino }),
        }
    }
}

/// Other processes that can write `what`, as "NAME (pid N)": one holding it
/// open for writing (a virtual machine running from an image, fuse2fs
/// serving it, a `dd` onto the card), or holding a shared writable mapping
/// of it, which writes the file with no descriptor left open. Read-only
/// openers (udev probing a device after a write) do no harm and are not
/// listed. Only processes this user may inspect are seen, which for root is
/// all of them.
pub fn writers_of(roots: &Roots, what: Held) -> Vec<String> {
    let me = std::process::id().to_string();
    let Ok(procs) = std::fs::read_dir(&roots.proc) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in procs.filter_map(Result::ok) {
        let pid = p.file_name().to_string_lossy().into_owned();
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if writes_by_fd(&p.path(), what) || writes_by_mapping(&p.path(), what) {
            let comm = read_trimmed(&p.path().join("comm")).unwrap_or_else(|| "?".into());
            out.push(format!("{comm} (pid {pid})"));
        }
    }
    out
}

/// An open descriptor of `what` that is not read-only.
fn writes_by_fd(proc_pid: &Path, what: Held) -> bool {
    let Ok(fds) = std::fs::read_dir(proc_pid.join("fd")) else {
        return false;
    };
    for fd in fds.filter_map(Result::ok) {
        let Ok(meta) = std::fs::metadata(fd.path()) else {
            continue;
        };
        let same = match what {
            Held::File(k) => meta.is_file() && meta.dev() == k.dev && meta.ino() == k.ino,
            Held::Device(ma, mi) => {
                meta.file_type().is_block_device()
                    && (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev())) == (ma, mi)
            }
        };
        if !same {
            continue;
        }
        let info = std::fs::read_to_string(proc_pid.join("fdinfo").join(fd.file_name())).unwrap_or_default();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .unwrap_or(0);
        if flags & libc::O_ACCMODE as u32 != libc::O_RDONLY as u32 {
            return true;
        }
    }
    false
}

/// A shared, writable mapping of the file `what` in /proc/PID/maps
/// (`addr perms offset major:minor inode path`, device numbers in hex).
fn writes_by_mapping(proc_pid: &Path, what: Held) -> bool {
    let Held::File(key) = what else { return false };
    let Ok(maps) = std::fs::read_to_string(proc_pid.join("maps")) else {
        return false;
    };
    let (ma, mi) = key.major_minor();
    maps.lines().any(|line| {
        let mut f = line.split_ascii_whitespace();
        let (Some(_), Some(perms), Some(_), Some(dev), Some(ino)) = (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return false;
        };
        let p = perms.as_bytes();
        if p.len() < 4 || p[1] != b'w' || p[3] != b's' {
            return false;
        }
        let Some((a, b)) = dev.split_once(':') else {
            return false;
        };
        u32::from_str_radix(a, 16) == Ok(ma) && u32::from_str_radix(b, 16) == Ok(mi) && ino.parse() == Ok(key.ino)
    })
}

/// Processes able to write the target's bytes under any name (open for
/// writing, or a shared writable mapping), seen again on each of several
/// scans over about a second. Tools that scan devices (`losetup`, `blkid`,
/// udev) open them read-write for an instant; they are not users, and
/// counting one that passed by would make two runs on two different devices
/// refuse each other at random.
pub fn persistent_writers(roots: &Roots, aliases: &Aliases) -> Vec<String> {
    let scan = || {
        let mut w: Vec<String> = aliases
            .target
            .into_iter()
            .chain(aliases.others.iter().map(|a| a.node))
            .flat_map(|n| writers_of(roots, Held::from(n)))
            .collect();
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

/// Mount points whose source is the regular file `key` (a FUSE filesystem
/// such as fuse2fs serving an image): the file is in use, though no loop
/// device shows it.
pub fn mounts_of_file(roots: &Roots, key: FileKey) -> Vec<String> {
    let Ok(mountinfo) = std::fs::read_to_string(roots.proc.join("self/mountinfo")) else {
        return Vec::new();
    };
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let source = super::super::mounts::unescape(right.split(' ').nth(1)?);
            let point = super::super::mounts::unescape(left.split(' ').nth(4)?);
            (source.starts_with('/') && FileKey::of(Path::new(&source)) == Some(key)).then_some(point)
        })
        .collect()
}

/// Mounts and swap on exactly the block device `major:minor` (not on its
/// partitions, which are names of their own), as reasons.
pub fn mounts_of_device(roots: &Roots, major: u32, minor: u32, node: &Path) -> Vec<String> {
    let nodes = [node.display().to_string()];
    let mut out: Vec<String> = std::fs::read_to_string(roots.proc.join("self/mountinfo"))
        .map(|m| super::super::mounts::mounts_of(&m, &[format!("{major}:{minor}")], &nodes))
        .unwrap_or_default()
        .into_iter()
        .map(|m| format!("{} is mounted on {}", m.source, m.mount_point))
        .collect();
    if let Ok(s) = std::fs::read_to_string(roots.proc.join("swaps")) {
        out.extend(
            super::super::mounts::swaps_of(&s, &nodes)
                .into_iter()
                .map(|s| format!("{s} is swap")),
        );
    }
    out
}

/// Whether a flashlab run holds the lock of a file target (for `info`).
pub fn file_locked(path: &Path) -> bool {
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    else {
        return false;
    };
    matches!(
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockShared),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK
    )
}
