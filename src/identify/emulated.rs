//! An emulated card, recognised by what the emulation publishes about
//! itself: its state record (`/run/flashlab/emulate/PID.json`: its process,
//! mount point, loop device, and the card it serves) and its FUSE
//! filesystem, mounted under the name every emulation uses ([`FS_NAME`]).
//! A loop device is an emulated card when its backing file (as the kernel
//! names it in sysfs) lies in an emulation's mount point, that emulation's
//! record beside the mount point names the mount point and a loop device of
//! this number, its process is alive, and a FUSE filesystem of that name is
//! mounted there: never by a path's text alone. Nothing is read from
//! the device (a stopped emulation would hang the read).
//!
//! The record names the card (`sim:SPEC` and the time scale) for people:
//! identification shows it, and nothing that measures ever reads it.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::sysfs::Roots;

/// The FUSE filesystem's name every emulation mounts with (`FSName`): the
/// source column of its mountinfo line.
pub const FS_NAME: &str = "flashlab-emulate";

/// What an emulation records about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub pid: u32,
    pub mountpoint: PathBuf,
    #[serde(default)]
    pub loop_device: Option<String>,
    /// The card it serves (`sim:demo,au_size=1M`), for identification.
    #[serde(default)]
    pub spec: Option<String>,
    /// Wall seconds per second of the card's time.
    #[serde(default)]
    pub time_scale: Option<f64>,
}

/// Every emulation recorded in `dir` (`Places::emulations`): its state
/// file and record.
pub fn records(dir: &Path) -> Vec<(PathBuf, Record)> {
    let Ok(dir) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, Record)> = dir
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| {
            let text = crate::files::read_small(&p, 64 << 10).ok()?;
            let rec = serde_json::from_str::<Record>(&text).ok()?;
            Some((p, rec))
        })
        .collect();
    out.sort_by_key(|(_, r)| r.pid);
    out
}

/// Whether process `pid` is alive and a flashlab (a zombie is not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().starts_with("flashlab")))
        .unwrap_or(false)
}

/// The state letter of `/proc/PID/stat` (R, S, D, T, t, Z...).
pub fn state(pid: u32) -> Option<char> {
    state_letter(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// After the last `)`, since the command name in parentheses may hold
/// anything.
fn state_letter(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// The backing file of loop device `dev` (`/dev/loop3`), from sysfs
/// (`/sys/block/loopN/loop/backing_file`), the kernel's path of the file:
/// the loop's own `LOOP_GET_STATUS64` asks the file's filesystem, which for
/// a stopped emulation may wait on it, and fails once its connection is
/// aborted.
pub fn backing_file(roots: &Roots, dev: &str) -> Option<PathBuf> {
    let name = Path::new(dev).file_name()?.to_str()?;
    let text = std::fs::read_to_string(roots.sys.join("block").join(name).join("loop/backing_file")).ok()?;
    Some(PathBuf::from(text.trim_end()))
}

/// Whether loop device `dev` still shows a file in the emulation's mount.
pub fn shows_mount(roots: &Roots, dev: &str, mountpoint: &Path) -> bool {
    backing_file(roots, dev).is_some_and(|b| b.starts_with(mountpoint))
}

/// The id of the FUSE connection of an emulation mounted at `mountpoint`
/// (its directory under /sys/fs/fuse/connections) in `mountinfo`: the
/// kernel's number of the mount's device (`MKDEV(major, minor)`, as
/// mountinfo shows it). None unless a FUSE filesystem named [`FS_NAME`] is
/// mounted exactly there.
pub fn connection_in(mountinfo: &str, mountpoint: &Path) -> Option<u64> {
    mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let f: Vec<&str> = left.split(' ').collect();
        let mut r = right.split(' ');
        let (fstype, source) = (r.next()?, r.next()?);
        let point = super::mounts::unescape(f.get(4)?);
        if Path::new(&point) != mountpoint || !fstype.starts_with("fuse") || source != FS_NAME {
            return None;
        }
        let (major, minor) = f.get(2)?.split_once(':')?;
        Some((major.parse::<u64>().ok()? << 20) | minor.parse::<u64>().ok()?)
    })
}

/// [`connection_in`] this process's mount table.
pub fn fuse_connection(roots: &Roots, mountpoint: &Path) -> Option<u64> {
    connection_in(
        &std::fs::read_to_string(roots.proc.join("self/mountinfo")).ok()?,
        mountpoint,
    )
}

/// An emulated card, as identification reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Emulated {
    /// The emulation's process.
    pub pid: u32,
    /// The card, as the emulation published it (None: it published none).
    pub spec: Option<String>,
    pub time_scale: Option<f64>,
}

impl Emulated {
    /// "emulated card (sim:demo, time scale 1)".
    pub fn describe(&self) -> String {
        let spec = self.spec.as_deref().unwrap_or("card not named");
        match self.time_scale {
            Some(f) => format!("emulated card ({spec}, time scale {f})"),
            None => format!("emulated card ({spec})"),
        }
    }
}

/// The record of the emulation whose loop device is the block device at
/// `dev` (alive or not). Found from the device itself, whatever state
/// directory that emulation was given: the loop's backing file (sysfs, by
/// the device's number) lies in the emulation's mount point `DIR/PID.mnt`,
/// whose record is `DIR/PID.json`; it must name this mount point and a
/// loop device of this number.
pub fn record_of(roots: &Roots, dev: &Path) -> Option<Record> {
    let number = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .filter(|m| m.file_type().is_block_device())
            .map(|m| m.rdev())
    };
    let want = number(dev)?;
    let (major, minor) = (rustix::fs::major(want), rustix::fs::minor(want));
    let text = std::fs::read_to_string(roots.sys.join(format!("dev/block/{major}:{minor}/loop/backing_file"))).ok()?;
    let file = PathBuf::from(text.trim_end());
    let mountpoint = file.parent()?;
    if mountpoint.extension().is_none_or(|e| e != "mnt") {
        return None;
    }
    let rec: Record =
        serde_json::from_str(&crate::files::read_small(&mountpoint.with_extension("json"), 64 << 10).ok()?).ok()?;
    (rec.mountpoint == mountpoint
        && rec
            .loop_device
            .as_deref()
            .is_some_and(|l| number(Path::new(l)) == Some(want)))
    .then_some(rec)
}

/// The live emulation serving the block device at `dev`, if any (see the
/// module documentation for the facts required).
pub fn serving(roots: &Roots, dev: &Path) -> Option<Emulated> {
    record_of(roots, dev)
        .filter(|r| alive(r.pid) && fuse_connection(roots, &r.mountpoint).is_some())
        .map(|r| Emulated {
            pid: r.pid,
            spec: r.spec,
            time_scale: r.time_scale,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_letter_follows_the_last_parenthesis() {
        assert_eq!(state_letter("4242 (flashlab) T 1 4242 ..."), Some('T'));
        assert_eq!(state_letter("7 (a) b (c)) S 1 ..."), Some('S'));
        assert_eq!(state_letter("7 no parenthesis"), None);
    }

    #[test]
    fn a_connection_is_the_kernel_number_of_the_emulations_own_mount() {
        let info = "\
27 1 254:0 / / rw - ext4 /dev/vda rw
42 27 0:39 / /run/flashlab/emulate/4242.mnt rw,nosuid - fuse flashlab-emulate rw,user_id=0
43 27 0:40 / /run/flashlab/emulate/77.mnt rw - fuse sshfs rw
44 27 1:2 / /tmp/my\\040dir/5.mnt rw - fuse.flashlab flashlab-emulate rw
";
        let at = |p: &str| connection_in(info, Path::new(p));
        assert_eq!(at("/run/flashlab/emulate/4242.mnt"), Some(39));
        // Another FUSE filesystem at a recorded mount point is not ours.
        assert_eq!(at("/run/flashlab/emulate/77.mnt"), None);
        // Escaped mount points; MKDEV(1, 2) is 1 << 20 | 2.
        assert_eq!(at("/tmp/my dir/5.mnt"), Some((1 << 20) | 2));
        assert_eq!(at("/"), None);
    }

    #[test]
    fn an_emulated_card_says_what_it_serves() {
        let e = Emulated {
            pid: 1,
            spec: Some("sim:demo".into()),
            time_scale: Some(0.5),
        };
        assert_eq!(e.describe(), "emulated card (sim:demo, time scale 0.5)");
        let hidden = Emulated { spec: None, ..e };
        assert_eq!(hidden.describe(), "emulated card (card not named, time scale 0.5)");
    }
}
