//! Which devices a batch tests: those named, and with `--all-removable`
//! every removable disk the kernel shows; the same bytes named twice are
//! tested once.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::args::TargetArg;
use crate::error::{CliError, CliResult};

/// The batch's devices in order, each with the device it repeats (the
/// same block device or file under another name), if any.
pub fn gather(named: &[TargetArg], all_removable: bool) -> CliResult<Vec<(TargetArg, Option<String>)>> {
    let mut all: Vec<TargetArg> = named.to_vec();
    if all_removable {
        for path in removable(Path::new("/sys/block")) {
            if !all.iter().any(|t| t.text == path) {
                all.push(crate::args::target(&path).map_err(CliError::usage)?);
            }
        }
    }
    if all.is_empty() {
        return Err(CliError::usage("batch has no device to test")
            .hint("name them (`flashlab batch /dev/sdb /dev/sdc --write`) or add --all-removable"));
    }
    let mut seen: Vec<((u64, u64), String)> = Vec::new();
    Ok(all
        .into_iter()
        .map(|t| {
            let key = bytes_of(&t);
            let first = key.and_then(|k| seen.iter().find(|(s, _)| *s == k).map(|(_, n)| n.clone()));
            if let (Some(k), None) = (key, &first) {
                seen.push((k, t.text.clone()));
            }
            (t, first)
        })
        .collect())
}

/// What names a target's bytes: a block device's number, a file's device
/// and inode. None for a simulated card (each is its own) or a path that
/// cannot be read (the run refuses it with its reason).
fn bytes_of(t: &TargetArg) -> Option<(u64, u64)> {
    let crate::args::Resolved::Path(p) = &t.resolved else {
        return None;
    };
    let m = std::fs::metadata(p).ok()?;
    if !m.file_type().is_block_device() {
        return Some((m.dev(), m.ino()));
    }
    // A loop device is its backing file's bytes: the file named beside it
    // is the same card (it was refused as in use, after the other ran).
    let (major, minor) = (rustix::fs::major(m.rdev()), rustix::fs::minor(m.rdev()));
    let backing = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/loop/backing_file")).ok();
    match backing.and_then(|b| std::fs::metadata(b.trim()).ok()) {
        Some(f) => Some((f.dev(), f.ino())),
        None => Some((u64::MAX, m.rdev())),
    }
}

/// Whole disks under `sys_block` a card reader or stick shows
/// ([`is_removable`]) with media in them.
pub fn removable(sys_block: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(sys_block) else {
        return Vec::new();
    };
    let mut out: Vec<String> = rd
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| is_removable(sys_block, name))
        .filter(|name| {
            let size = std::fs::read_to_string(sys_block.join(name).join("size")).unwrap_or_default();
            size.trim().parse::<u64>().unwrap_or(0) > 0
        })
        .map(|name| format!("/dev/{name}"))
        .collect();
    out.sort();
    out
}

/// Whether the disk `name` under `sys_block` is a card reader's or a
/// stick's: marked removable, or on USB or an SD host. Loop, RAM and
/// mapped devices never are.
pub fn is_removable(sys_block: &Path, name: &str) -> bool {
    let virt = ["loop", "ram", "zram", "dm-", "md", "nbd", "sr"];
    if name.is_empty() || virt.iter().any(|v| name.starts_with(v)) {
        return false;
    }
    let dir = sys_block.join(name);
    let Ok(canonical) = std::fs::canonicalize(&dir) else {
        return false;
    };
    let transport = crate::identify::Transport::of_disk(name, &canonical.display().to_string());
    let flagged = std::fs::read_to_string(dir.join("removable")).is_ok_and(|s| s.trim() == "1");
    flagged
        || matches!(
            transport,
            crate::identify::Transport::Usb | crate::identify::Transport::Mmc
        )
}

/// Whether a named device is a block device (a slot a station can watch).
pub fn is_block_device(t: &TargetArg) -> bool {
    match &t.resolved {
        crate::args::Resolved::Path(p) => std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device()),
        crate::args::Resolved::Sim(_) => false,
    }
}

/// A block device's size in bytes from sysfs (`/dev/NAME`): 0 once its
/// media is gone; None for anything else.
pub fn size_of(device: &str) -> Option<u64> {
    let name = device.strip_prefix("/dev/")?;
    let text = std::fs::read_to_string(format!("/sys/class/block/{name}/size")).ok()?;
    text.trim().parse::<u64>().ok().map(|s| s.saturating_mul(512))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_named_twice_are_tested_once() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("card.img");
        std::fs::write(&f, vec![0u8; 4096]).unwrap();
        let link = dir.path().join("again.img");
        std::fs::hard_link(&f, &link).unwrap();
        let named: Vec<TargetArg> = [
            f.display().to_string(),
            link.display().to_string(),
            "sim:demo".into(),
            "sim:demo".into(),
        ]
        .iter()
        .map(|t| crate::args::target(t).unwrap())
        .collect();
        let got = gather(&named, false).unwrap();
        let dups: Vec<Option<String>> = got.into_iter().map(|(_, d)| d).collect();
        assert_eq!(dups, vec![None, Some(f.display().to_string()), None, None]);
        let e = gather(&[], false).unwrap_err();
        assert_eq!(e.exit, crate::error::Exit::Usage);
    }

    /// A removable disk with media is picked, one without media and a
    /// loop device are not.
    #[test]
    fn removable_disks_are_those_with_media() {
        let dir = tempfile::tempdir().unwrap();
        let mk = |name: &str, removable: &str, size: &str| {
            let d = dir.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("removable"), removable).unwrap();
            std::fs::write(d.join("size"), size).unwrap();
        };
        mk("sdb", "1\n", "62333952\n");
        mk("sdc", "1\n", "0\n");
        mk("loop3", "1\n", "2048\n");
        mk("nvme0n1", "0\n", "2048\n");
        assert_eq!(removable(dir.path()), vec!["/dev/sdb".to_string()]);
    }
}
