//! What a disk sits on, as the JSON contract names it (`info.transport`).

use serde::{Deserialize, Serialize};

/// The bus or layer under a target: whether flash timing can reach the
/// reads at all (a loop device, a RAM disk or a dm layer puts something
/// else in between: `measure::Medium`), and how the device is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// An SD/MMC host: the card's registers are in sysfs.
    Mmc,
    Usb,
    Nvme,
    /// SATA, SAS and SCSI disks, and USB readers the tree does not show as USB.
    Scsi,
    Virtio,
    Loop,
    Zram,
    /// The kernel's brd RAM disks (`/dev/ramN`).
    Ram,
    /// A device-mapper layer (`dm-N`).
    Dm,
    /// A software RAID (`mdN`).
    Md,
    /// A network block device.
    Nbd,
    /// A regular file.
    File,
    /// flashlab's in-process simulated card.
    Sim,
    /// Anything else, also a name a later flashlab stored.
    #[serde(other)]
    #[default]
    Unknown,
}

impl Transport {
    /// What a USB reader hides and what still works, for `info`: a card
    /// behind usb-storage shows as /dev/sdX with none of its own registers
    /// (a reader's host driver, as Realtek's, shows it as mmcblk with them:
    /// that is `Mmc`).
    pub fn hides(self) -> Option<&'static str> {
        (self == Transport::Usb).then_some(
            "behind a USB reader (or a USB stick): the reader hides the card's registers (CID, CSD, SCR, SSR: its \
             maker, serial, AU size and classes as the card states them) and the bus mode it runs at. Geometry, \
             open AUs, the FAT area, speed and capacity still measure, from timing, through the reader's own \
             overhead. In a native SD slot the card shows as /dev/mmcblkN, registers and all",
        )
    }

    /// The contract's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Mmc => "mmc",
            Transport::Usb => "usb",
            Transport::Nvme => "nvme",
            Transport::Scsi => "scsi",
            Transport::Virtio => "virtio",
            Transport::Loop => "loop",
            Transport::Zram => "zram",
            Transport::Ram => "ram",
            Transport::Dm => "dm",
            Transport::Md => "md",
            Transport::Nbd => "nbd",
            Transport::File => "file",
            Transport::Sim => "sim",
            Transport::Unknown => "unknown",
        }
    }

    /// From a disk's kernel name and its place in the device tree.
    pub fn of_disk(name: &str, canonical: &str) -> Transport {
        let prefixed = [
            ("loop", Transport::Loop),
            ("zram", Transport::Zram),
            ("ram", Transport::Ram),
            ("dm-", Transport::Dm),
            ("md", Transport::Md),
            ("nbd", Transport::Nbd),
            ("nvme", Transport::Nvme),
        ];
        if let Some(&(_, t)) = prefixed.iter().find(|(p, _)| name.starts_with(p)) {
            t
        } else if name.starts_with("mmcblk") || canonical.contains("/mmc_host/") {
            Transport::Mmc
        } else if canonical.contains("/usb") {
            Transport::Usb
        } else if canonical.contains("/virtio") || name.starts_with("vd") {
            Transport::Virtio
        } else if canonical.contains("/host") || canonical.contains("/ata") || name.starts_with("sd") {
            Transport::Scsi
        } else {
            Transport::Unknown
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_usb_disk_is_said_to_hide_the_cards_registers() {
        use super::Transport;
        assert!(
            Transport::Usb
                .hides()
                .unwrap()
                .contains("hides the card's registers (CID, CSD, SCR, SSR")
        );
        assert_eq!(Transport::Mmc.hides(), None);
        assert_eq!(Transport::Loop.hides(), None);
    }

    use super::Transport;

    #[test]
    fn each_word_reads_back_and_an_unknown_one_is_unknown() {
        for t in [
            Transport::Mmc,
            Transport::Usb,
            Transport::Nvme,
            Transport::Scsi,
            Transport::Virtio,
            Transport::Loop,
            Transport::Zram,
            Transport::Ram,
            Transport::Dm,
            Transport::Md,
            Transport::Nbd,
            Transport::File,
            Transport::Sim,
            Transport::Unknown,
        ] {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
            assert_eq!(serde_json::from_str::<Transport>(&json).unwrap(), t);
        }
        assert_eq!(
            serde_json::from_str::<Transport>("\"thunderbolt\"").unwrap(),
            Transport::Unknown
        );
    }
}
