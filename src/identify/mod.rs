//! Identification of a real target (`flashlab info`): what the kernel knows about
//! the device, who is using it, and the SD/MMC registers when it is a card.

pub mod emulated;
pub mod mmc;
pub mod mounts;
pub mod slot;
pub mod stack;
pub mod sysfs;
pub mod transport;
pub mod uevent;

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::units::{Iec, PowerOfTwoSplit, split_power_of_two};
use mmc::MmcInfo;
use sysfs::{Related, Reported, Roots};
pub use transport::Transport;

/// The `info` object of the JSON contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub path: String,
    pub size_bytes: u64,
    pub size_iec: String,
    pub logical_block_size: u64,
    pub physical_block_size: u64,
    #[serde(flatten)]
    pub reported: Reported,
    pub transport: Transport,
    #[serde(flatten)]
    pub related: Related,
    /// Anything on the device (or a partition of it) is mounted or used as swap.
    pub mounted: bool,
    /// The kernel refuses an exclusive open: mounted, held, or opened exclusively
    /// by another program; or an alias of it is (below), or a flashlab run
    /// holds the file. Writing tests refuse such a target.
    pub in_use: bool,
    /// Other paths to the same bytes: loop devices over this file, a loop
    /// device's backing file, other loop devices over that file.
    pub aliases: Vec<String>,
    /// Why `in_use` is true, one reason each.
    pub in_use_by: Vec<String>,
    /// The size as 2^n x odd, to reason about erase-block sizes that tile it.
    pub capacity_hint: Option<PowerOfTwoSplit>,
    pub mmc: Option<MmcInfo>,
    /// A loop device served by `flashlab emulate`, by what the emulation
    /// publishes about itself ([`emulated`]): a card, not a file's timing.
    #[serde(default)]
    pub emulated: Option<emulated::Emulated>,
    /// Where it sits: its bus, port and USB reader ([`slot::place`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<slot::Place>,
    pub notes: Vec<String>,
}

impl DeviceInfo {
    /// A skeleton with the geometry filled in; identification fills the rest.
    pub fn new(path: &str, size_bytes: u64, logical: u64, physical: u64, transport: Transport) -> Self {
        DeviceInfo {
            path: path.to_string(),
            size_bytes,
            size_iec: Iec(size_bytes).to_string(),
            logical_block_size: logical,
            physical_block_size: physical,
            reported: Reported::default(),
            transport,
            related: Related::default(),
            mounted: false,
            in_use: false,
            aliases: Vec::new(),
            in_use_by: Vec::new(),
            capacity_hint: split_power_of_two(size_bytes),
            mmc: None,
            emulated: None,
            place: None,
            notes: Vec::new(),
        }
    }
}

/// Identify a block device or regular file already opened as a target (so it is
/// known to exist and be readable; `size`, `logical`, `physical` come from it).
pub fn identify(
    roots: &Roots,
    path: &Path,
    size: u64,
    logical: u32,
    physical: u32,
) -> Result<DeviceInfo, sysfs::SysfsError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|source| sysfs::SysfsError::Read {
        path: shown.clone(),
        source,
    })?;
    if !meta.file_type().is_block_device() {
        let mut info = DeviceInfo::new(&shown, size, u64::from(logical), u64::from(physical), Transport::File);
        info.reported.read_only = meta.permissions().readonly();
        info.place = Some(slot::of_filesystem(roots, meta.dev()));
        add_aliases(roots, path, &mut info);
        return Ok(info);
    }
    let rdev = meta.rdev();
    let (major, minor) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
    let facts = sysfs::block_facts(roots, major, minor)?;
    let mut place = slot::place(roots, major, minor);
    let mut info = DeviceInfo::new(&shown, size, u64::from(logical), u64::from(physical), facts.transport);
    if facts.size_bytes != size {
        info.notes.push(format!(
            "sysfs size {} differs from the size the device reports ({size})",
            facts.size_bytes
        ));
    }
    info.reported = facts.reported;
    info.notes.extend(info.transport.hides().map(str::to_string));
    if info.transport == Transport::Loop {
        info.emulated = emulated::serving(roots, path);
        if let Some(e) = &info.emulated {
            info.reported.model = Some(e.describe());
            place.bus = slot::EMULATING_HOST.into();
        }
    }
    info.related = facts.related;
    info.place = Some(place);
    info.mounted = !info.related.mounts.is_empty() || !info.related.swaps.is_empty();
    if exclusive_open_refused(path) && !info.mounted && info.related.holders.is_empty() {
        info.in_use_by.push(format!(
            "{shown} is open exclusively by another program (another flashlab run?)"
        ));
    }
    info.in_use_by.extend(
        info.related
            .mounts
            .iter()
            .map(|m| format!("{} is mounted on {}", m.source, m.mount_point)),
    );
    info.in_use_by
        .extend(info.related.swaps.iter().map(|s| format!("{s} is swap")));
    info.in_use_by
        .extend(info.related.holders.iter().map(|h| format!("{shown} is held by {h}")));
    add_aliases(roots, path, &mut info);
    if let Some(raw) = facts.mmc {
        let mmc = MmcInfo::from_raw(raw, size);
        if info.reported.serial.is_none() {
            info.reported.serial = mmc.cid.as_ref().map(|c| c.serial_hex.clone());
        }
        info.mmc = Some(mmc);
    }
    Ok(info)
}

/// Fill in the other names of `path`'s bytes and whatever makes one of
/// them busy, then `in_use` from every reason found.
fn add_aliases(roots: &Roots, path: &Path, info: &mut DeviceInfo) {
    use stack::Node;
    let a = stack::Stack::read(roots).aliases(path);
    let held = stack::persistent_writers(roots, &a);
    info.in_use_by
        .extend(held.into_iter().map(|w| format!("open or mapped for writing by {w}")));
    // Swap files by identity: /proc/swaps names them by path.
    let swap_files: Vec<stack::FileKey> = std::fs::read_to_string(roots.proc.join("swaps"))
        .map(|s| mounts::swap_areas(&s))
        .unwrap_or_default()
        .iter()
        .filter_map(|s| stack::FileKey::of(Path::new(s)))
        .collect();
    for (file, key) in a.files() {
        let shown = file.as_ref().map_or_else(
            || format!("a deleted file (inode {})", key.ino),
            |f| f.display().to_string(),
        );
        if file.as_deref() != Some(path) {
            info.aliases.push(format!("{shown} (backing file)"));
        }
        for point in stack::mounts_of_file(roots, key) {
            info.in_use_by.push(format!("{shown} is mounted on {point}"));
        }
        if swap_files.contains(&key) {
            info.in_use_by.push(format!("{shown} is active swap"));
        }
        if file.as_deref().is_some_and(stack::file_locked) {
            info.in_use_by
                .push(format!("{shown} is locked by a flashlab run writing to it"));
        }
    }
    for o in a.devices() {
        let (Node::Device { major, minor }, Some(node)) = (o.node, &o.path) else {
            continue;
        };
        let what = if o.partly() {
            "whole disk"
        } else if o.below {
            "device under it"
        } else {
            "same bytes"
        };
        info.aliases.push(format!("{} ({what})", node.display()));
        let before = info.in_use_by.len();
        info.in_use_by.extend(
            stack::mounts_of_device(roots, major, minor, node)
                .into_iter()
                .map(|u| format!("{u} ({} shows the same bytes)", node.display())),
        );
        // The whole disk of a partition is refused exclusively while any
        // partition is mounted: that is no use of this partition.
        if info.in_use_by.len() == before && !o.partly() {
            if let Ok(f) = sysfs::block_facts(roots, major, minor) {
                info.in_use_by.extend(
                    f.related
                        .holders
                        .iter()
                        .map(|h| format!("{} (same bytes) is held by {h}", node.display())),
                );
            }
            if info.in_use_by.len() == before && exclusive_open_refused(node) {
                info.in_use_by.push(format!(
                    "{} (same bytes) is open exclusively by another program",
                    node.display()
                ));
            }
        }
    }
    info.in_use_by.dedup();
    info.in_use = !info.in_use_by.is_empty();
}

/// The kernel's own in-use test: O_EXCL on a block device fails with EBUSY while
/// it or a partition is mounted, held, or exclusively opened elsewhere.
pub fn exclusive_open_refused(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let r = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(path);
    matches!(r, Err(e) if e.raw_os_error() == Some(libc::EBUSY))
}
