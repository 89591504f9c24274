//! Who is using a block device: mounts (from /proc/self/mountinfo), swap (from
//! /proc/swaps) and holders (device-mapper, md, from sysfs). The exclusive open in
//! `seam::real` is the final word; these say *what* is using it.

use serde::{Deserialize, Serialize};

/// One mount of a device or one of its partitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// The device node as mountinfo names it (`/dev/mmcblk0p2`).
    pub source: String,
    pub mount_point: String,
    pub fstype: String,
    /// `major:minor` of the mounted device.
    pub dev: String,
}

/// Parse mountinfo text and return the mounts whose device number is in `devs`
/// (`"179:0"`) or whose source is one of `nodes` (`/dev/mmcblk0p1`, for btrfs,
/// whose mountinfo device number is anonymous).
pub fn mounts_of(mountinfo: &str, devs: &[String], nodes: &[String]) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let rfields: Vec<&str> = right.split(' ').collect();
        if fields.len() < 5 || rfields.len() < 2 {
            continue;
        }
        let dev = fields[2];
        let source = unescape(rfields[1]);
        if devs.iter().any(|d| d == dev) || nodes.contains(&source) {
            out.push(Mount {
                source,
                mount_point: unescape(fields[4]),
                fstype: rfields[0].to_string(),
                dev: dev.to_string(),
            });
        }
    }
    out
}

/// Swap areas on any of `nodes`, from /proc/swaps.
pub fn swaps_of(swaps: &str, nodes: &[String]) -> Vec<String> {
    swap_areas(swaps)
        .into_iter()
        .filter(|s| nodes.iter().any(|n| n == s))
        .collect()
}

/// Every swap area's name in /proc/swaps: devices and swap files alike.
pub fn swap_areas(swaps: &str) -> Vec<String> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(unescape)
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo` octal.
pub(crate) fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let v = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 179:2 / / rw,relatime shared:1 - ext4 /dev/mmcblk0p2 rw
23 22 179:1 / /boot/fire\\040fw rw,relatime shared:2 - vfat /dev/mmcblk0p1 rw
24 22 0:5 / /dev rw,nosuid shared:3 - devtmpfs udev rw
25 22 0:45 / /data rw shared:4 - btrfs /dev/sda1 rw
garbage line without separator
";

    #[test]
    fn finds_partition_mounts_by_number_and_btrfs_by_source() {
        let m = mounts_of(MOUNTINFO, &["179:0".into(), "179:1".into(), "179:2".into()], &[]);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].mount_point, "/");
        assert_eq!(m[1].mount_point, "/boot/fire fw");
        assert_eq!(m[1].fstype, "vfat");
        let b = mounts_of(MOUNTINFO, &["8:0".into(), "8:1".into()], &["/dev/sda1".into()]);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].fstype, "btrfs");
        assert!(mounts_of(MOUNTINFO, &["7:0".into()], &["/dev/loop0".into()]).is_empty());
    }

    #[test]
    fn finds_swap() {
        let swaps = "Filename\tType\tSize\tUsed\tPriority\n/dev/sdb2 partition 100 0 -2\n";
        assert_eq!(swaps_of(swaps, &["/dev/sdb2".into()]), vec!["/dev/sdb2".to_string()]);
        assert!(swaps_of(swaps, &["/dev/sdb1".into()]).is_empty());
        let both = "Filename\tType\tSize\tUsed\tPriority\n/dev/sdb2 partition 100 0 -2\n/var/tmp/my\\040swap file 16380 0 -3\n";
        assert_eq!(
            swap_areas(both),
            vec!["/dev/sdb2".to_string(), "/var/tmp/my swap".to_string()]
        );
    }
}
