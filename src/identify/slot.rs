//! Where a device sits: the bus it shares with other devices (a batch
//! takes one device's speed figures only while nothing else on its bus is
//! busy), the port it is plugged into, and a USB reader's own ids. Read
//! from the device's place in sysfs's device tree,
//! `/sys/devices/<controller>/usbN/<bus>-<port>[.<port>...]/...` (Linux
//! sysfs ABI, docs/SOURCES.md).
//!
//! Two readers of one model on one hub report the same vendor, product and
//! serial (Alcor's 058f:6366 reports 058F63666485 on every unit); their
//! port paths differ, and stay the same across plugging in order.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sysfs::Roots;

/// Where a block device sits ([`place`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Place {
    /// Devices that share this name share a bus's bandwidth: "usb
    /// 0000:00:14.0" (a USB host controller, both its root hubs), "mmc
    /// mmc0" (a native SD host), "fs 0:52" (loop devices over files of one
    /// filesystem with no block device below it, as tmpfs or one FUSE
    /// mount), "pci 0000:00:05.0" (a disk on its own controller).
    pub bus: String,
    /// The port path: USB's `1-1.2`, an SD host's `mmc0`; None where there
    /// is no plug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// A multi-LUN reader's slot: the SCSI logical unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lun: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usb: Option<UsbIds>,
}

/// A USB device's own ids (the reader's, not the card's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsbIds {
    /// `idVendor`, four hex digits.
    pub vendor: String,
    /// `idProduct`.
    pub product: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_name: Option<String>,
}

/// How many loop devices deep a backing file is followed (a loop over a
/// file on a loop over a file ...).
const MAX_DEPTH: usize = 8;

/// The bus of every card `flashlab emulate` serves. Each is its own FUSE
/// mount, but this machine's CPUs serve every one's requests, so cards
/// emulated at once slow each other as cards on one hub do: 16 at once
/// read 13-44 MB/s each, one alone 99 MB/s (`scripts/batch-speed.sh`; the
/// README's batch section), and the outlier rule then judged a card by
/// the host's load.
pub const EMULATING_HOST: &str = "emulated on this host";

/// The place of block device `major:minor`: from its disk's directory in
/// the device tree; a loop device's from the filesystem its backing file
/// lives on.
pub fn place(roots: &Roots, major: u32, minor: u32) -> Place {
    place_at(roots, major, minor, 0)
}

/// The place of a regular file: the filesystem's device `dev` (a
/// file's `st_dev`), or the filesystem alone where no block device lies
/// below it.
pub fn of_filesystem(roots: &Roots, dev: u64) -> Place {
    filesystem_at(roots, dev, 0)
}

fn filesystem_at(roots: &Roots, dev: u64, depth: usize) -> Place {
    let (ma, mi) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    if ma == 0 {
        Place {
            bus: format!("fs {ma}:{mi}"),
            ..Place::default()
        }
    } else {
        place_at(roots, ma, mi, depth)
    }
}

fn place_at(roots: &Roots, major: u32, minor: u32, depth: usize) -> Place {
    let own = |why: &str| Place {
        bus: format!("{why} {major}:{minor}"),
        ..Place::default()
    };
    let Ok(mut dir) = std::fs::canonicalize(roots.sys.join(format!("dev/block/{major}:{minor}"))) else {
        return own("block");
    };
    if dir.join("partition").exists()
        && let Some(disk) = dir.parent()
    {
        dir = disk.to_path_buf();
    }
    if let Some(backing) = read(&dir.join("loop/backing_file")) {
        return match std::fs::metadata(&backing) {
            Ok(m) if depth < MAX_DEPTH => {
                use std::os::unix::fs::MetadataExt;
                filesystem_at(roots, m.dev(), depth + 1)
            }
            _ => own("loop"),
        };
    }
    of_tree(&dir).unwrap_or_else(|| own("block"))
}

/// The place a disk's directory in `/sys/devices` shows: a USB controller
/// before an SD host (a USB reader that shows its card as mmcblk shares
/// the USB bus), else the last PCI function above it.
fn of_tree(disk: &Path) -> Option<Place> {
    let above: Vec<&Path> = disk.ancestors().skip(1).collect();
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let numbered = |n: &str, prefix: &str| {
        n.strip_prefix(prefix)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    };
    let lun = above
        .iter()
        .map(|p| name(p))
        .find(|n| n.split(':').count() == 4 && n.split(':').all(|x| x.parse::<u32>().is_ok()))
        .and_then(|n| n.rsplit(':').next().and_then(|l| l.parse().ok()));
    let usb_device = above.iter().find(|p| p.join("idVendor").exists());
    if let Some(hub) = above.iter().position(|p| numbered(&name(p), "usb")) {
        let controller = above.get(hub + 1).map_or_else(|| name(above[hub]), |c| name(c));
        let usb = usb_device.map(|d| UsbIds {
            vendor: read(&d.join("idVendor")).unwrap_or_default(),
            product: read(&d.join("idProduct")).unwrap_or_default(),
            serial: read(&d.join("serial")),
            product_name: read(&d.join("product")),
        });
        return Some(Place {
            bus: format!("usb {controller}"),
            port: usb_device.map(|d| name(d)),
            lun,
            usb,
        });
    }
    if let Some(host) = above
        .iter()
        .find(|p| numbered(&name(p), "mmc") && p.parent().is_some_and(|q| name(q) == "mmc_host"))
    {
        return Some(Place {
            bus: format!("mmc {}", name(host)),
            port: Some(name(host)),
            lun: None,
            usb: None,
        });
    }
    let pci = |n: &str| n.len() == 12 && n.as_bytes()[4] == b':' && n.as_bytes()[7] == b':' && n.as_bytes()[10] == b'.';
    above.iter().map(|p| name(p)).find(|n| pci(n)).map(|n| Place {
        bus: format!("pci {n}"),
        port: None,
        lun,
        usb: None,
    })
}

/// A sysfs attribute's text, trimmed; None where it is missing, empty or
/// unreadable (a place is a best guess, never a refusal).
fn read(path: &Path) -> Option<String> {
    std::fs::read(path)
        .ok()
        .map(|b| crate::registers::bits::escape_ascii(String::from_utf8_lossy(&b).trim().as_bytes()))
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs tree written out as lines, for the tests: `D dir`, `F path =
    /// text`, `L path -> target` (a symlink), paths below `root`.
    fn materialise(root: &Path, listing: &str) -> std::io::Result<Roots> {
        for line in listing
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let (kind, rest) = line.split_at(1);
            let rest = rest.trim();
            let at = |p: &str| -> std::path::PathBuf { root.join(p.trim().trim_start_matches('/')) };
            match kind {
                "D" => std::fs::create_dir_all(at(rest))?,
                "F" => {
                    let (p, text) = rest.split_once(" = ").unwrap_or((rest, ""));
                    let p = at(p);
                    if let Some(d) = p.parent() {
                        std::fs::create_dir_all(d)?;
                    }
                    std::fs::write(p, format!("{text}\n"))?;
                }
                "L" => {
                    let (p, target) = rest
                        .split_once(" -> ")
                        .ok_or_else(|| std::io::Error::other(format!("a link without a target: {line}")))?;
                    let p = at(p);
                    if let Some(d) = p.parent() {
                        std::fs::create_dir_all(d)?;
                    }
                    std::os::unix::fs::symlink(target.trim(), p)?;
                }
                _ => return Err(std::io::Error::other(format!("not a tree line: {line}"))),
            }
        }
        Ok(Roots {
            sys: root.join("sys"),
            proc: root.join("proc"),
            dev: root.join("dev"),
        })
    }

    fn tree(name: &str) -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        let listing = std::fs::read_to_string(format!(
            "{}/tests/fixtures/sysfs/{name}.tree",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let roots = materialise(dir.path(), &listing).unwrap();
        (dir, roots)
    }

    /// Two readers alike in every id are told apart by their ports, and
    /// share one bus (their hub's controller).
    #[test]
    fn two_identical_alcor_readers_differ_by_port_only() {
        let (_d, roots) = tree("alcor-two-on-hub");
        let (b, c) = (place(&roots, 8, 16), place(&roots, 8, 32));
        assert_eq!(b.bus, "usb 0000:00:14.0");
        assert_eq!(c.bus, b.bus);
        assert_eq!((b.port.as_deref(), c.port.as_deref()), (Some("1-1.1"), Some("1-1.2")));
        let (ub, uc) = (b.usb.clone().unwrap(), c.usb.clone().unwrap());
        assert_eq!((ub.vendor.as_str(), ub.product.as_str()), ("058f", "6366"));
        assert_eq!(ub, uc, "the same ids on both");
        assert_eq!(ub.serial.as_deref(), Some("058F63666485"));
        assert_eq!((b.lun, c.lun), (Some(0), Some(0)));
        assert_ne!(b, c);
    }

    /// A USB reader whose card shows up as mmcblk shares the USB bus, not
    /// an SD host of its own.
    #[test]
    fn a_usb_reader_shown_as_mmcblk_is_on_the_usb_bus() {
        let (_d, roots) = tree("realtek-usb-mmcblk");
        let p = place(&roots, 179, 0);
        assert_eq!(p.bus, "usb 0000:00:14.0");
        assert_eq!(p.port.as_deref(), Some("1-3"));
        assert_eq!(p.usb.unwrap().product_name.as_deref(), Some("USB2.0-CRW"));
    }

    /// Two LUNs of one reader: one port, two slots; a partition is placed
    /// as its disk.
    #[test]
    fn a_multi_lun_reader_has_one_port_and_a_lun_per_slot() {
        let (_d, roots) = tree("multi-lun");
        let (sd, micro, part) = (place(&roots, 8, 48), place(&roots, 8, 64), place(&roots, 8, 65));
        assert_eq!(sd.bus, "usb 0000:00:14.0", "usb2 is the same controller's USB 3 hub");
        assert_eq!((sd.port.as_deref(), micro.port.as_deref()), (Some("2-1"), Some("2-1")));
        assert_eq!((sd.lun, micro.lun), (Some(0), Some(1)));
        assert_eq!(part, micro);
    }

    #[test]
    fn a_native_sd_host_is_its_own_bus_and_unknown_devices_their_own() {
        let (_d, roots) = tree("pci-sd-host");
        let p = place(&roots, 179, 8);
        assert_eq!(
            (p.bus.as_str(), p.port.as_deref(), p.usb),
            ("mmc mmc1", Some("mmc1"), None)
        );
        assert_eq!(place(&roots, 1, 0).bus, "block 1:0");
    }

    #[test]
    fn a_malformed_tree_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(materialise(dir.path(), "X nothing").is_err());
        assert!(materialise(dir.path(), "L /sys/a").is_err());
    }
}
