//! Reading a block device's facts from sysfs and procfs. The roots are parameters so
//! unit tests can build a fake tree; the binary always passes `/sys` and `/proc`.

use std::fs;
use std::path::{Path, PathBuf};

use super::mmc::MmcRaw;
use super::mounts::{self, Mount};
use super::transport::Transport;
use crate::registers::hex::parse_register;

/// Where the kernel's views of the machine are read from: /sys, /proc and
/// /dev, or a tree of the same shape that a test made (`Roots::system()` is
/// the machine's own). Not the host controller of `sim/hosts.rs`.
#[derive(Debug, Clone)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
    /// Prefix of device nodes (`/dev`).
    pub dev: PathBuf,
}

impl Roots {
    pub fn system() -> Self {
        Roots {
            sys: "/sys".into(),
            proc: "/proc".into(),
            dev: "/dev".into(),
        }
    }
}

/// A sysfs attribute that exists but holds something that cannot be right.
#[derive(Debug, thiserror::Error)]
pub enum SysfsError {
    #[error("{path}: cannot read ({source})")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: unexpected content '{content}' ({what})")]
    Malformed {
        path: String,
        content: String,
        what: String,
    },
    #[error("no sysfs entry for block device {dev} under {root}")]
    NoEntry { dev: String, root: String },
}

/// One partition of a whole disk.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Partition {
    pub name: String,
    pub start_bytes: u64,
    pub size_bytes: u64,
}

/// What the kernel reports of a device itself: its queue limits and the
/// names its driver gives. `info` carries the same group, so it is copied
/// whole, not field by field.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Reported {
    pub minimum_io_size: Option<u64>,
    pub optimal_io_size: Option<u64>,
    pub discard_granularity: Option<u64>,
    pub rotational: Option<bool>,
    pub read_only: bool,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub serial: Option<String>,
    pub firmware: Option<String>,
}

/// What sits around a device: the disk it is part of, the file under a loop
/// device, its partitions, and what holds, mounts or swaps on it.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Related {
    /// The whole disk, when the device is a partition.
    pub parent: Option<String>,
    pub loop_backing_file: Option<String>,
    pub partitions: Vec<Partition>,
    pub holders: Vec<String>,
    pub mounts: Vec<Mount>,
    pub swaps: Vec<String>,
}

/// Everything sysfs and procfs say about one block device.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlockFacts {
    pub name: String,
    pub size_bytes: u64,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
    pub transport: Transport,
    pub reported: Reported,
    pub related: Related,
    pub mmc: Option<MmcRaw>,
}

fn read_opt(path: &Path) -> Result<Option<String>, SysfsError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // Some attributes (e.g. ssr on older hosts) exist but refuse reads.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::EIO) => Ok(None),
        Err(source) => Err(SysfsError::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}

fn read_text(path: &Path) -> Result<Option<String>, SysfsError> {
    Ok(read_opt(path)?
        .filter(|s| !s.is_empty())
        .map(|s| crate::registers::bits::escape_ascii(s.as_bytes())))
}

fn read_u64(path: &Path) -> Result<Option<u64>, SysfsError> {
    let Some(text) = read_opt(path)? else { return Ok(None) };
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map(Some).map_err(|_| SysfsError::Malformed {
        path: path.display().to_string(),
        content: crate::registers::bits::escape_ascii(text.as_bytes()),
        what: "expected an unsigned integer".into(),
    })
}

fn read_register<const N: usize>(path: &Path, name: &'static str) -> Result<Option<[u8; N]>, SysfsError> {
    let Some(text) = read_opt(path)? else { return Ok(None) };
    let bytes = parse_register(&text, name, N).map_err(|e| SysfsError::Malformed {
        path: path.display().to_string(),
        content: crate::registers::bits::escape_ascii(text.as_bytes()),
        what: e.to_string(),
    })?;
    Ok(Some(bytes.try_into().expect("length checked by parse_register")))
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Read everything about block device `major:minor`.
pub fn block_facts(roots: &Roots, major: u32, minor: u32) -> Result<BlockFacts, SysfsError> {
    let dev = format!("{major}:{minor}");
    let link = roots.sys.join("dev/block").join(&dev);
    let devdir = fs::canonicalize(&link).map_err(|_| SysfsError::NoEntry {
        dev: dev.clone(),
        root: roots.sys.display().to_string(),
    })?;
    let is_partition = devdir.join("partition").exists();
    let disk = if is_partition {
        devdir.parent().map(Path::to_path_buf).unwrap_or(devdir.clone())
    } else {
        devdir.clone()
    };
    let name = devdir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let disk_name = disk
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let size_path = devdir.join("size");
    let sectors = read_u64(&size_path)?.ok_or_else(|| SysfsError::Malformed {
        path: size_path.display().to_string(),
        content: String::new(),
        what: "missing".into(),
    })?;
    let size_bytes = sectors.checked_mul(512).ok_or_else(|| SysfsError::Malformed {
        path: size_path.display().to_string(),
        content: sectors.to_string(),
        what: "size overflows".into(),
    })?;
    let queue = disk.join("queue");
    let device = disk.join("device");
    let mut facts = BlockFacts {
        name: name.clone(),
        size_bytes,
        logical_block_size: read_u64(&queue.join("logical_block_size"))?,
        physical_block_size: read_u64(&queue.join("physical_block_size"))?,
        transport: Transport::of_disk(&disk_name, &disk.display().to_string()),
        reported: reported(&queue, &devdir, &device, &disk)?,
        related: Related {
            parent: is_partition.then(|| disk_name.clone()),
            loop_backing_file: read_text(&disk.join("loop/backing_file"))?,
            ..Default::default()
        },
        mmc: None,
    };
    let mut devs = vec![dev.clone()];
    let mut nodes = vec![roots.dev.join(&name).display().to_string()];
    if is_partition {
        facts.related.holders = entries(&devdir.join("holders"));
    } else {
        facts.related.holders = entries(&disk.join("holders"));
        for child in entries(&disk) {
            let pdir = disk.join(&child);
            if !pdir.join("partition").exists() {
                continue;
            }
            let start = read_u64(&pdir.join("start"))?.unwrap_or(0).saturating_mul(512);
            let size = read_u64(&pdir.join("size"))?.unwrap_or(0).saturating_mul(512);
            if let Some(d) = read_opt(&pdir.join("dev"))? {
                devs.push(d);
            }
            nodes.push(roots.dev.join(&child).display().to_string());
            facts.related.holders.extend(
                entries(&pdir.join("holders"))
                    .into_iter()
                    .map(|h| format!("{h} (on {child})")),
            );
            facts.related.partitions.push(Partition {
                name: child,
                start_bytes: start,
                size_bytes: size,
            });
        }
    }
    if let Some(mountinfo) = read_opt(&roots.proc.join("self/mountinfo"))? {
        facts.related.mounts = mounts::mounts_of(&mountinfo, &devs, &nodes);
    }
    if let Some(swaps) = read_opt(&roots.proc.join("swaps"))? {
        facts.related.swaps = mounts::swaps_of(&swaps, &nodes);
    }
    if let Some(card_type) = read_opt(&device.join("type"))?
        && (device.join("cid").exists() || device.join("csd").exists())
    {
        facts.mmc = Some(MmcRaw {
            card_type,
            cid: read_register::<16>(&device.join("cid"), "CID")?,
            csd: read_register::<16>(&device.join("csd"), "CSD")?,
            scr: read_register::<8>(&device.join("scr"), "SCR")?,
            ssr: read_register::<64>(&device.join("ssr"), "SSR")?,
            erase_size_bytes: read_u64(&device.join("erase_size"))?,
            preferred_erase_size_bytes: read_u64(&device.join("preferred_erase_size"))?,
            date: read_text(&device.join("date"))?,
        });
    }
    Ok(facts)
}

/// The queue limits of `queue` and the names the driver gives under
/// `device` (or, for the serial, on the disk itself).
fn reported(queue: &Path, devdir: &Path, device: &Path, disk: &Path) -> Result<Reported, SysfsError> {
    Ok(Reported {
        minimum_io_size: read_u64(&queue.join("minimum_io_size"))?,
        optimal_io_size: read_u64(&queue.join("optimal_io_size"))?,
        discard_granularity: read_u64(&queue.join("discard_granularity"))?,
        rotational: read_u64(&queue.join("rotational"))?.map(|v| v != 0),
        read_only: read_u64(&devdir.join("ro"))?.unwrap_or(0) != 0,
        model: match read_text(&device.join("model"))? {
            Some(m) => Some(m),
            None => read_text(&device.join("name"))?,
        },
        vendor: read_text(&device.join("vendor"))?,
        serial: match read_text(&device.join("serial"))? {
            Some(s) => Some(s),
            None => read_text(&disk.join("serial"))?,
        },
        firmware: match read_text(&device.join("firmware_rev"))? {
            Some(f) => Some(f),
            None => match read_text(&device.join("rev"))? {
                Some(f) => Some(f),
                None => read_text(&device.join("fwrev"))?,
            },
        },
    })
}

/// For tests: the files of a made-up /sys or /proc under `dir`, each a
/// path below it and its text, their folders made.
#[cfg(test)]
pub(crate) fn fake_files(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let p = dir.join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /sys and /proc holding a Kingston SA04G (seed 004) as mmcblk1 with
    /// one partition mounted, so the parser is tested on exactly what Linux shows.
    fn kingston_tree(root: &Path, ssr: Option<&str>) -> Roots {
        let sys = root.join("sys");
        let disk = sys.join("devices/platform/mmc_host/mmc1/mmc1:aaaa/block/mmcblk1");
        fake_files(
            &disk,
            &[
                ("size", "7626752\n"),
                ("ro", "0\n"),
                ("dev", "179:8\n"),
                ("queue/logical_block_size", "512\n"),
                ("queue/physical_block_size", "512\n"),
                ("queue/minimum_io_size", "512\n"),
                ("queue/optimal_io_size", "0\n"),
                ("queue/discard_granularity", "4194304\n"),
                ("queue/rotational", "0\n"),
            ],
        );
        // Linux's mmcblk device/ is the card: registers from mmc_registers.csv.
        let card = sys.join("devices/platform/mmc_host/mmc1/mmc1:aaaa");
        fake_files(
            &card,
            &[
                ("type", "SD\n"),
                ("name", "SA04G\n"),
                ("cid", "02544d5341303447113533890900d371\n"),
                ("csd", "400e00325b5900001d177f800a40008d\n"),
                ("scr", "0235800001000000\n"),
                ("date", "03/2013\n"),
                ("erase_size", "512\n"),
                ("preferred_erase_size", "4194304\n"),
                ("serial", "0x35338909\n"),
                ("fwrev", "0x1\n"),
            ],
        );
        if let Some(ssr) = ssr {
            fake_files(&card, &[("ssr", ssr)]);
        }
        std::os::unix::fs::symlink(&card, disk.join("device")).unwrap();
        let part = disk.join("mmcblk1p1");
        fake_files(
            &part,
            &[
                ("partition", "1\n"),
                ("start", "8192\n"),
                ("size", "7618560\n"),
                ("dev", "179:9\n"),
                ("ro", "0\n"),
            ],
        );
        fs::create_dir_all(part.join("holders")).unwrap();
        fs::create_dir_all(disk.join("holders")).unwrap();
        fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&disk, sys.join("dev/block/179:8")).unwrap();
        std::os::unix::fs::symlink(&part, sys.join("dev/block/179:9")).unwrap();
        let proc = root.join("proc");
        fake_files(
            &proc,
            &[
                (
                    "self/mountinfo",
                    "30 1 179:9 / /media/card rw - vfat /dev/mmcblk1p1 rw\n",
                ),
                ("swaps", "Filename Type Size Used Priority\n"),
            ],
        );
        Roots {
            sys,
            proc,
            dev: "/dev".into(),
        }
    }

    #[test]
    fn reads_kingston_card() {
        let tmp = tempfile::tempdir().unwrap();
        let roots = kingston_tree(tmp.path(), None);
        let f = block_facts(&roots, 179, 8).unwrap();
        assert_eq!(f.name, "mmcblk1");
        assert_eq!(f.related.parent, None);
        assert_eq!(f.size_bytes, 3_904_897_024);
        assert_eq!(f.logical_block_size, Some(512));
        assert_eq!(f.reported.discard_granularity, Some(4 << 20));
        assert_eq!(f.reported.rotational, Some(false));
        assert_eq!(f.transport, Transport::Mmc);
        assert_eq!(f.reported.model.as_deref(), Some("SA04G"));
        assert_eq!(f.reported.serial.as_deref(), Some("0x35338909"));
        assert_eq!(f.reported.firmware.as_deref(), Some("0x1"));
        assert_eq!(
            f.related.partitions,
            vec![Partition {
                name: "mmcblk1p1".into(),
                start_bytes: 8192 * 512,
                size_bytes: 7_618_560 * 512
            }]
        );
        assert_eq!(f.related.mounts.len(), 1);
        assert_eq!(f.related.mounts[0].mount_point, "/media/card");
        let mmc = f.mmc.unwrap();
        assert_eq!(mmc.card_type, "SD");
        assert_eq!(mmc.preferred_erase_size_bytes, Some(4 << 20));
        assert_eq!(mmc.date.as_deref(), Some("03/2013"));
        let info = super::super::mmc::MmcInfo::from_raw(mmc, f.size_bytes);
        assert_eq!(info.cid.as_ref().unwrap().product_name, "SA04G");
        assert_eq!(info.csd.as_ref().unwrap().capacity_bytes, Some(3_904_897_024));
        assert_eq!(info.scr.as_ref().unwrap().spec_version, "3.0x");
        assert_eq!(
            info.preferred_erase_size_source,
            super::super::mmc::EraseSizeSource::KernelCapacityGuess
        );
        assert!(
            info.notes.iter().any(|n| n.contains("kernel's guess")),
            "{:?}",
            info.notes
        );
    }

    #[test]
    fn partition_points_at_its_disk_and_ssr_au_is_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        // AU_SIZE 9 (4 MiB) at bits [431:428]: byte 10, high nibble.
        let mut ssr = [0u8; 64];
        ssr[10] = 0x90;
        let hex = crate::registers::hex::encode(&ssr);
        let roots = kingston_tree(tmp.path(), Some(&hex));
        let p = block_facts(&roots, 179, 9).unwrap();
        assert_eq!(p.name, "mmcblk1p1");
        assert_eq!(p.related.parent.as_deref(), Some("mmcblk1"));
        assert_eq!(p.size_bytes, 7_618_560 * 512);
        assert_eq!(p.logical_block_size, Some(512));
        assert!(p.related.partitions.is_empty());
        assert_eq!(p.related.mounts.len(), 1);
        let info = super::super::mmc::MmcInfo::from_raw(p.mmc.unwrap(), 3_904_897_024);
        assert_eq!(info.ssr.as_ref().unwrap().au_size_bytes, Some(4 << 20));
        assert_eq!(
            info.preferred_erase_size_source,
            super::super::mmc::EraseSizeSource::SsrAu
        );
    }

    #[test]
    fn malformed_attributes_are_errors_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let roots = kingston_tree(tmp.path(), None);
        let disk = roots.sys.join("devices/platform/mmc_host/mmc1/mmc1:aaaa/block/mmcblk1");
        fs::write(disk.join("queue/logical_block_size"), "five hundred\n").unwrap();
        let err = block_facts(&roots, 179, 8).unwrap_err();
        assert!(err.to_string().contains("logical_block_size"), "{err}");
        fs::write(disk.join("queue/logical_block_size"), "512\n").unwrap();
        fs::write(
            roots.sys.join("devices/platform/mmc_host/mmc1/mmc1:aaaa/cid"),
            "02544d53\n",
        )
        .unwrap();
        let err = block_facts(&roots, 179, 8).unwrap_err();
        assert!(
            err.to_string().contains("cid") && err.to_string().contains("16 bytes"),
            "{err}"
        );
        assert!(matches!(block_facts(&roots, 1, 1), Err(SysfsError::NoEntry { .. })));
    }

    #[test]
    fn transports() {
        assert_eq!(
            Transport::of_disk("loop3", "/sys/devices/virtual/block/loop3"),
            Transport::Loop
        );
        assert_eq!(
            Transport::of_disk("zram0", "/sys/devices/virtual/block/zram0"),
            Transport::Zram
        );
        assert_eq!(
            Transport::of_disk("nvme0n1", "/sys/devices/pci0000:00/nvme/nvme0/nvme0n1"),
            Transport::Nvme
        );
        assert_eq!(
            Transport::of_disk(
                "sdb",
                "/sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host3/target3:0:0/3:0:0:0/block/sdb"
            ),
            Transport::Usb
        );
        assert_eq!(
            Transport::of_disk(
                "sda",
                "/sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda"
            ),
            Transport::Scsi
        );
        assert_eq!(
            Transport::of_disk("vda", "/sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda"),
            Transport::Virtio
        );
    }
}
