//! What sits on what: loop devices and the files behind them, partitions and
//! their disks, device-mapper and md volumes and their members. The same
//! bytes can be reached through a file and every loop device over it, so the
//! write path asks here before it claims a target, and before it trusts a
//! journal directory not to live on the target it protects.

use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::sysfs::Host;

/// A regular file by identity (device and inode), the way the kernel's loop
/// driver knows its backing file: a path can be renamed or hard-linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FileKey {
    pub dev: u64,
    pub ino: u64,
}

impl FileKey {
    pub fn of(path: &Path) -> Option<FileKey> {
        std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| FileKey {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// An attached loop device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopDevice {
    /// `/dev/loop3`.
    pub node: PathBuf,
    pub major: u32,
    pub minor: u32,
    /// The backing file as the kernel shows it (None when it was deleted).
    pub backing: Option<PathBuf>,
    pub backing_key: Option<FileKey>,
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim_end_matches('\n').to_string())
}

fn major_minor(text: &str) -> Option<(u32, u32)> {
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Every attached loop device (those with a `loop/` directory in sysfs).
pub fn loop_devices(host: &Host) -> Vec<LoopDevice> {
    let Ok(entries) = std::fs::read_dir(host.sys.join("block")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let dir = e.path();
        let Some(text) = read_trimmed(&dir.join("loop/backing_file")) else {
            continue;
        };
        let Some((major, minor)) = read_trimmed(&dir.join("dev")).as_deref().and_then(major_minor) else {
            continue;
        };
        let backing = (!text.ends_with(" (deleted)")).then(|| PathBuf::from(&text));
        let backing_key = backing.as_deref().and_then(FileKey::of);
        out.push(LoopDevice {
            node: host.dev.join(&name),
            major,
            minor,
            backing,
            backing_key,
        });
    }
    out.sort_by(|a, b| a.node.cmp(&b.node));
    out
}

/// The whole disk of a partition (itself for a whole disk), by number.
pub fn whole_disk(host: &Host, major: u32, minor: u32) -> (u32, u32) {
    let Ok(dir) = std::fs::canonicalize(host.sys.join(format!("dev/block/{major}:{minor}"))) else {
        return (major, minor);
    };
    if !dir.join("partition").exists() {
        return (major, minor);
    }
    dir.parent()
        .and_then(|p| read_trimmed(&p.join("dev")))
        .as_deref()
        .and_then(major_minor)
        .unwrap_or((major, minor))
}

/// The source of the mount holding `path`, as the mount table names it
/// (`/dev/sdb1`, or an image file for a FUSE filesystem such as fuse2fs).
pub fn mount_source(host: &Host, path: &Path) -> Option<PathBuf> {
    let canon = std::fs::canonicalize(path).ok()?;
    let mountinfo = std::fs::read_to_string(host.proc.join("self/mountinfo")).ok()?;
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let source = right.split(' ').nth(1).unwrap_or_default();
        let Some(point) = fields.get(4) else { continue };
        let point = super::mounts::unescape(point);
        if canon.starts_with(&point) && best.as_ref().is_none_or(|(n, _)| point.len() >= *n) {
            best = Some((point.len(), super::mounts::unescape(source)));
        }
    }
    best.map(|(_, s)| PathBuf::from(s))
}

/// What a process may hold open: a regular file by key, or a block device by
/// number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    File(FileKey),
    Device(u32, u32),
}

/// Other processes holding `what` open for writing, as "NAME (pid N)": a
/// virtual machine running from an image, fuse2fs serving it, a `dd` onto the
/// card. Read-only openers (udev probing a device after a write) do no harm
/// and are not listed. Only processes this user may inspect are seen, which
/// for root is all of them.
pub fn writers_of(host: &Host, what: Held) -> Vec<String> {
    let me = std::process::id().to_string();
    let Ok(procs) = std::fs::read_dir(&host.proc) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in procs.filter_map(Result::ok) {
        let pid = p.file_name().to_string_lossy().into_owned();
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
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
            let info = std::fs::read_to_string(p.path().join("fdinfo").join(fd.file_name())).unwrap_or_default();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
                .unwrap_or(0);
            if flags & libc::O_ACCMODE as u32 != libc::O_RDONLY as u32 {
                let comm = read_trimmed(&p.path().join("comm")).unwrap_or_else(|| "?".into());
                out.push(format!("{comm} (pid {pid})"));
                break;
            }
        }
    }
    out
}

/// Mount points whose source is the regular file `key` (a FUSE filesystem
/// such as fuse2fs serving an image): the file is in use, though no loop
/// device shows it.
pub fn mounts_of_file(host: &Host, key: FileKey) -> Vec<String> {
    let Ok(mountinfo) = std::fs::read_to_string(host.proc.join("self/mountinfo")) else {
        return Vec::new();
    };
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let source = super::mounts::unescape(right.split(' ').nth(1)?);
            let point = super::mounts::unescape(left.split(' ').nth(4)?);
            (source.starts_with('/') && FileKey::of(Path::new(&source)) == Some(key)).then_some(point)
        })
        .collect()
}

/// The block device a path's filesystem lives on. `st_dev` names it for
/// ordinary filesystems; btrfs and overlays report an anonymous device
/// (major 0), so then the mount table's source is asked.
pub fn device_of_path(host: &Host, path: &Path) -> Option<(u32, u32)> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let (ma, mi) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    if ma != 0 {
        return Some((ma, mi));
    }
    let meta = std::fs::metadata(mount_source(host, path)?).ok()?;
    meta.file_type()
        .is_block_device()
        .then(|| (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev())))
}

/// Everything a block device's bytes ultimately rest on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Underlying {
    /// Block devices by number, with the whole disk of each partition.
    pub devices: Vec<(u32, u32)>,
    /// Backing files of loop devices on the way down.
    pub files: Vec<FileKey>,
}

/// Walk down from block device `major:minor`: its whole disk, the members of
/// a device-mapper or md volume, and for a loop device its backing file and,
/// recursively, the device that file lives on.
pub fn underlying(host: &Host, major: u32, minor: u32) -> Underlying {
    let loops = loop_devices(host);
    let mut out = Underlying::default();
    let mut todo = vec![(major, minor)];
    // Stacks are shallow; the bound only guards against a cycle in a
    // damaged or synthetic sysfs.
    let mut steps = 0;
    while let Some((ma, mi)) = todo.pop() {
        steps += 1;
        if steps > 64 || out.devices.contains(&(ma, mi)) {
            continue;
        }
        out.devices.push((ma, mi));
        let whole = whole_disk(host, ma, mi);
        if whole != (ma, mi) {
            todo.push(whole);
        }
        if let Ok(dir) = std::fs::canonicalize(host.sys.join(format!("dev/block/{ma}:{mi}")))
            && let Ok(slaves) = std::fs::read_dir(dir.join("slaves"))
        {
            for s in slaves.filter_map(Result::ok) {
                if let Some(mm) = read_trimmed(&s.path().join("dev")).as_deref().and_then(major_minor) {
                    todo.push(mm);
                }
            }
        }
        if let Some(l) = loops.iter().find(|l| (l.major, l.minor) == (ma, mi))
            && let (Some(key), Some(file)) = (l.backing_key, l.backing.as_deref())
        {
            if !out.files.contains(&key) {
                out.files.push(key);
            }
            if let Some(mm) = device_of_path(host, file) {
                todo.push(mm);
            }
        }
    }
    out
}

/// The devices and files that show a target's bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Aliases {
    /// The target's own device number (whole disk included), when it is a
    /// block device.
    pub target_devices: Vec<(u32, u32)>,
    /// Loop devices over the same file, other than the target itself.
    pub loops: Vec<PathBuf>,
    /// Their device numbers.
    pub loop_devices: Vec<(u32, u32)>,
    /// The regular file holding the bytes (the target, or a loop device's
    /// backing file).
    pub files: Vec<(PathBuf, FileKey)>,
}

impl Aliases {
    /// Resolve the aliases of `path` (a block device or regular file).
    pub fn of(host: &Host, path: &Path) -> Aliases {
        let mut a = Aliases::default();
        let Ok(meta) = std::fs::metadata(path) else { return a };
        let loops = loop_devices(host);
        let key = if meta.is_file() {
            FileKey::of(path).inspect(|&k| a.files.push((path.to_path_buf(), k)))
        } else if meta.file_type().is_block_device() {
            let (ma, mi) = (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev()));
            a.target_devices.push((ma, mi));
            let whole = whole_disk(host, ma, mi);
            if whole != (ma, mi) {
                a.target_devices.push(whole);
            }
            let own = loops.iter().find(|l| (l.major, l.minor) == whole);
            if let Some(l) = own
                && let (Some(k), Some(b)) = (l.backing_key, &l.backing)
            {
                a.files.push((b.clone(), k));
            }
            own.and_then(|l| l.backing_key)
        } else {
            None
        };
        if let Some(k) = key {
            for l in loops.iter().filter(|l| l.backing_key == Some(k)) {
                if !a.target_devices.contains(&(l.major, l.minor)) {
                    a.loops.push(l.node.clone());
                    a.loop_devices.push((l.major, l.minor));
                }
            }
        }
        a
    }

    /// The alias loop devices as text, for messages.
    pub fn describe(&self) -> Vec<String> {
        self.loops.iter().map(|l| l.display().to_string()).collect()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_device_numbers_and_keys_files() {
        assert_eq!(major_minor("7:3\n"), Some((7, 3)));
        assert_eq!(major_minor("7"), None);
        let f = tempfile::NamedTempFile::new().unwrap();
        let k = FileKey::of(f.path()).unwrap();
        assert_eq!(Some(k), FileKey::of(f.path()));
        assert_eq!(FileKey::of(Path::new("/")), None, "a directory is not a file");
    }

    #[test]
    fn a_fake_sysfs_resolves_loops_partitions_and_members() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = tmp.path().join("sys");
        let w = |p: PathBuf, s: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        let backing = tmp.path().join("disk.img");
        std::fs::write(&backing, b"x").unwrap();
        // loop2 over disk.img, with partition loop2p1; dm-0 over loop2p1.
        let loop2 = sys.join("devices/virtual/block/loop2");
        w(loop2.join("dev"), "7:2\n");
        w(loop2.join("loop/backing_file"), &format!("{}\n", backing.display()));
        w(loop2.join("loop2p1/dev"), "259:0\n");
        w(loop2.join("loop2p1/partition"), "1\n");
        let dm = sys.join("devices/virtual/block/dm-0");
        w(dm.join("dev"), "253:0\n");
        std::fs::create_dir_all(dm.join("slaves")).unwrap();
        std::os::unix::fs::symlink(loop2.join("loop2p1"), dm.join("slaves/loop2p1")).unwrap();
        std::fs::create_dir_all(sys.join("block")).unwrap();
        std::fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&loop2, sys.join("block/loop2")).unwrap();
        std::os::unix::fs::symlink(&dm, sys.join("block/dm-0")).unwrap();
        std::os::unix::fs::symlink(&loop2, sys.join("dev/block/7:2")).unwrap();
        std::os::unix::fs::symlink(loop2.join("loop2p1"), sys.join("dev/block/259:0")).unwrap();
        std::os::unix::fs::symlink(&dm, sys.join("dev/block/253:0")).unwrap();
        let proc = tmp.path().join("proc");
        w(proc.join("self/mountinfo"), "");
        let host = Host {
            sys,
            proc,
            dev: "/dev".into(),
        };
        let loops = loop_devices(&host);
        assert_eq!(loops.len(), 1);
        assert_eq!(loops[0].node, PathBuf::from("/dev/loop2"));
        assert_eq!(loops[0].backing_key, FileKey::of(&backing));
        assert_eq!(whole_disk(&host, 259, 0), (7, 2));
        let u = underlying(&host, 253, 0);
        assert!(u.devices.contains(&(259, 0)) && u.devices.contains(&(7, 2)), "{u:?}");
        assert_eq!(u.files, vec![FileKey::of(&backing).unwrap()]);
    }
}
