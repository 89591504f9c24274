//! Setting the card up for its use: how to partition it, how to mount it,
//! and which filesystem a Raspberry Pi's root wants on it. Each piece
//! gives the command and the reason this card gives for it, from the
//! confident verdicts `advise` passes in.

use super::{A1_WRITE_IOPS, Advice, ENOUGH_RANDOM_OPEN_AUS, say};
use crate::identify::DeviceInfo;
use crate::units::Iec;

/// A sector as sfdisk counts a script's `start=` and `size=`: "the
/// default unit is sectors", of 512 bytes (sfdisk(8) (docs/SOURCES.md)).
const SECTOR: u64 = 512;
/// f2fs's fewest active logs, and its default, from `active_logs`: "f2fs
/// supports only 2, 4, and 6 logs. Default number is 6"
/// (f2fs documentation (docs/SOURCES.md)). Each log is written in order,
/// so each holds an AU open.
const F2FS_LOGS: [u64; 3] = [2, 4, 6];
/// ext4 writes its journal every 5 seconds unless told, `commit=nrsec`
/// (ext4 documentation (docs/SOURCES.md)); a minute lets a card
/// with few open AUs take a twelfth of the metadata writes, at the risk
/// of losing the last minute's changes on a power cut.
const COMMIT_S: u64 = 60;

/// One partitioning command that starts the first partition on an erase
/// block and ends it on one (sfdisk's script, fed on stdin), and what it
/// does, for the partition advice to carry.
pub(super) fn partition_command(info: Option<&DeviceInfo>, e: u64) -> Option<(String, String)> {
    let info = info?;
    // The partition table lives in the first erase block; the partition
    // starts at the next one (at 1 MiB at least, where tools expect it).
    let start = e.max(1 << 20);
    let whole = info.size_bytes.checked_sub(start)? / e * e;
    if whole == 0 {
        return None;
    }
    let device = if info.path.starts_with("/dev/") {
        info.path.as_str()
    } else {
        "DEVICE"
    };
    Some((
        format!(
            "for one partition ({} from {}; it replaces the partition table: copy the data off first; type=c for \
             FAT):",
            Iec(whole),
            Iec(start)
        ),
        format!(
            "echo 'start={}, size={}, type=83' | sudo sfdisk {device}",
            start / SECTOR,
            whole / SECTOR
        ),
    ))
}

/// What the card tells about its writes, for the mount options.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Writes {
    /// bench's best random 4 KiB write IOPS, from a whole sample.
    pub random_iops: Option<f64>,
    /// open-au's confident limits, in order and at random.
    pub open_in_order: Option<u64>,
    pub open_random: Option<u64>,
}

impl Writes {
    /// Small scattered writes cost this card dearly: below A1's rate, or
    /// fewer AUs open at random than a filesystem's metadata needs.
    fn scattered_cost(&self) -> Option<String> {
        if let Some(i) = self.random_iops.filter(|i| *i < A1_WRITE_IOPS) {
            return Some(format!("{i:.0} random 4 KiB writes a second"));
        }
        self.open_random
            .filter(|k| *k < ENOUGH_RANDOM_OPEN_AUS)
            .map(|k| crate::units::count(k, "AU open at random", "AUs open at random"))
    }
}

/// Mount options, each with this card's reason: noatime always (a read
/// would write), a longer commit where scattered writes are dear, and
/// discard as a weekly fstrim where the card takes it.
pub(super) fn mount_options(info: Option<&DeviceInfo>, w: Writes) -> Advice {
    let mut parts = vec!["mount noatime (a read then writes nothing)".to_string()];
    if let Some(cost) = w.scattered_cost() {
        parts.push(format!(
            "ext4 with commit={COMMIT_S} (its journal every {COMMIT_S} s, not 5: this card takes only {cost}; a \
             power cut can lose the last minute)"
        ));
    }
    match info.and_then(|i| i.reported.discard_granularity) {
        Some(g) if g > 0 => parts.push(
            "run fstrim weekly (systemctl enable fstrim.timer) rather than -o discard, which erases as files are \
             deleted, in the way of the writes (fstrim(8))"
                .to_string(),
        ),
        Some(_) => parts.push("the card takes no discard: neither -o discard nor fstrim helps it".to_string()),
        None => {}
    }
    say("mount_options", parts.join("; "))
}

/// Which filesystem a Raspberry Pi's root wants on this card, from its
/// open-AU limits: ext4 (the Pi OS default) where its scattered metadata
/// finds AUs open at random; else f2fs, whose logs each write in order,
/// with as many logs as the card keeps AUs open in order.
pub(super) fn pi_root(w: Writes) -> Option<Advice> {
    let in_order = w.open_in_order?;
    let text = match w.open_random {
        Some(r) if r >= ENOUGH_RANDOM_OPEN_AUS => format!(
            "Pi root: ext4, as Raspberry Pi OS has it: its scattered metadata lands in the {} open at random{}",
            crate::units::count(r, "AU", "AUs"),
            match w.random_iops.filter(|i| *i < A1_WRITE_IOPS) {
                Some(i) => format!(", though at {i:.0} random writes a second any root on it is slow"),
                None => String::new(),
            }
        ),
        _ if in_order >= F2FS_LOGS[0] => {
            let logs = F2FS_LOGS
                .iter()
                .rev()
                .find(|l| **l <= in_order)
                .copied()
                .unwrap_or(F2FS_LOGS[0]);
            format!(
                "Pi root: f2fs with -o active_logs={logs}: each log writes in order, and this card keeps \
                 {in_order} AUs open in order but {} at random, where ext4's scattered metadata would make it copy \
                 whole AUs",
                w.open_random.map_or("few".to_string(), |r| r.to_string())
            )
        }
        _ => "Pi root: none fits well: this card keeps 1 AU open, so any filesystem's metadata \
              makes it copy whole AUs; keep the root on a USB SSD, or mount it read-only with an overlay"
            .to_string(),
    };
    Some(say("pi_root", text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partition_starts_and_ends_on_erase_blocks() {
        let info = DeviceInfo::new("/dev/mmcblk0", 3_904_897_024, 512, 512, crate::identify::Transport::Mmc);
        let (text, command) = partition_command(Some(&info), 4 << 20).unwrap();
        // 3.64 GiB: 931 whole 4 MiB blocks, the first the table's.
        assert_eq!(
            command,
            "echo 'start=8192, size=7618560, type=83' | sudo sfdisk /dev/mmcblk0"
        );
        assert!(text.starts_with("for one partition (3.63 GiB from 4 MiB; "), "{text}");
        let small = DeviceInfo::new("/dev/sdb", 3 << 20, 512, 512, crate::identify::Transport::Usb);
        assert_eq!(
            partition_command(Some(&small), 4 << 20),
            None,
            "no whole block after the table"
        );
    }

    #[test]
    fn the_pi_root_follows_the_open_au_counts() {
        let w = |i, r| Writes {
            open_in_order: Some(i),
            open_random: Some(r),
            random_iops: None,
        };
        assert!(
            pi_root(w(6, 24))
                .unwrap()
                .text
                .contains("ext4, as Raspberry Pi OS has it")
        );
        let f = pi_root(w(5, 1)).unwrap().text;
        assert!(
            f.contains("f2fs with -o active_logs=4") && f.contains("keeps 5 AUs open in order but 1 at"),
            "{f}"
        );
        assert!(pi_root(w(1, 1)).unwrap().text.contains("none fits well"));
        assert_eq!(pi_root(Writes::default()), None, "no confident limit, no advice");
    }

    #[test]
    fn mount_options_give_this_cards_reasons() {
        let mut info = DeviceInfo::new("/dev/mmcblk0", 4 << 30, 512, 512, crate::identify::Transport::Mmc);
        info.reported.discard_granularity = Some(4 << 20);
        let slow = Writes {
            random_iops: Some(3.5),
            ..Writes::default()
        };
        let a = mount_options(Some(&info), slow).text;
        assert!(a.starts_with("mount noatime"), "{a}");
        assert!(
            a.contains("commit=60") && a.contains("only 4 random 4 KiB writes a second"),
            "{a}"
        );
        assert!(a.contains("fstrim weekly"), "{a}");
        info.reported.discard_granularity = Some(0);
        let fast = Writes {
            random_iops: Some(2000.0),
            open_random: Some(24),
            ..Writes::default()
        };
        let b = mount_options(Some(&info), fast).text;
        assert!(!b.contains("commit="), "{b}");
        assert!(b.contains("takes no discard"), "{b}");
    }
}
