//! CID, the card identification register (SD Physical Layer Simplified
//! Specification 5.2; JEDEC JESD84-B51 7.2 for MMC/eMMC). The two families lay it
//! out differently: MMC has a one-byte OEM id, a six-character name and a one-byte
//! date.

use serde::{Deserialize, Serialize};

use super::bits::{Bits, crc_ok};
use super::{Family, manufacturers};

/// A decoded CID.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cid {
    pub family: Family,
    pub manufacturer_id: u8,
    /// Community-known name for the id (mmc-utils' table), when there is one.
    pub manufacturer_name: Option<String>,
    /// OEM/application id as text (SD: two ASCII characters; MMC: one byte shown
    /// as `0xNN`), non-printable bytes escaped.
    pub oem_id: String,
    pub oem_id_raw: u16,
    /// Padding (trailing NUL bytes or spaces) dropped; `product_name_raw`
    /// keeps the bytes as the card holds them.
    pub product_name: String,
    /// The product name's bytes in hex.
    #[serde(default)]
    pub product_name_raw: String,
    /// Product revision as "major.minor" (two BCD nibbles).
    pub product_revision: String,
    pub serial: u32,
    pub serial_hex: String,
    pub manufacture_year: u16,
    pub manufacture_month: u8,
    /// MMC only: card, BGA or PoP (the CBX field).
    pub device_type: Option<String>,
    pub crc_ok: Option<bool>,
    pub notes: Vec<String>,
}

/// Decode an SD CID (SD spec 5.2).
pub fn decode_sd(raw: &[u8; 16]) -> Cid {
    let b = Bits(raw);
    let oem_raw = b.field(119, 104) as u16;
    let prv = b.field(63, 56) as u8;
    let year = 2000 + b.field(19, 12) as u16;
    let month = b.field(11, 8) as u8;
    let serial = b.field(55, 24) as u32;
    let mut notes = Vec::new();
    month_note(month, &mut notes);
    super::bits::crc_note(crc_ok(raw), &mut notes);
    Cid {
        family: Family::Sd,
        manufacturer_id: raw[0],
        manufacturer_name: manufacturers::sd_name(raw[0]).map(String::from),
        oem_id: b.text(119, 104),
        oem_id_raw: oem_raw,
        product_name: b.name(103, 64),
        product_name_raw: super::hex::encode(b.bytes(103, 64)),
        product_revision: format!("{}.{}", prv >> 4, prv & 0xf),
        serial,
        serial_hex: format!("0x{serial:08x}"),
        manufacture_year: year,
        manufacture_month: month,
        device_type: None,
        crc_ok: crc_ok(raw),
        notes,
    }
}

/// Decode an MMC/eMMC CID (JESD84-B51 7.2).
///
/// The 4-bit year is ambiguous: 1997+y on MMC before v4.41, and 2013+y for codes
/// 0-12 on devices whose EXT_CSD_REV is 5 or more (every eMMC since about 2011).
/// Offline, without EXT_CSD, the modern reading is assumed, as Linux does for
/// revision 5+ devices; the other reading is given in a note. On a live device
/// `info` uses the kernel's `date` attribute, which saw the real EXT_CSD_REV.
pub fn decode_mmc(raw: &[u8; 16]) -> Cid {
    let b = Bits(raw);
    let oem_raw = b.field(111, 104) as u16;
    let prv = b.field(55, 48) as u8;
    let serial = b.field(47, 16) as u32;
    let month = b.field(15, 12) as u8;
    let year_code = b.field(11, 8) as u16;
    let legacy = 1997 + year_code;
    let year = if legacy < 2010 { legacy + 16 } else { legacy };
    let mut notes = Vec::new();
    if year != legacy {
        notes.push(format!(
            "year code {year_code} reads {year} on eMMC with EXT_CSD_REV >= 5 (v4.41+), {legacy} on older MMC"
        ));
    }
    month_note(month, &mut notes);
    super::bits::crc_note(crc_ok(raw), &mut notes);
    let device_type = match b.field(113, 112) {
        0 => "card",
        1 => "BGA",
        2 => "PoP",
        _ => "reserved",
    };
    Cid {
        family: Family::Mmc,
        manufacturer_id: raw[0],
        manufacturer_name: manufacturers::mmc_name(raw[0]).map(String::from),
        oem_id: format!("0x{oem_raw:02x}"),
        oem_id_raw: oem_raw,
        product_name: b.name(103, 56),
        product_name_raw: super::hex::encode(b.bytes(103, 56)),
        product_revision: format!("{}.{}", prv >> 4, prv & 0xf),
        serial,
        serial_hex: format!("0x{serial:08x}"),
        manufacture_year: year,
        manufacture_month: month,
        device_type: Some(device_type.into()),
        crc_ok: crc_ok(raw),
        notes,
    }
}

fn month_note(month: u8, notes: &mut Vec<String>) {
    if !(1..=12).contains(&month) {
        notes.push(format!(
            "month code {month} is not a month (1-12): the register may be corrupt"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(hex: &str) -> [u8; 16] {
        crate::registers::hex::raw(hex, "CID")
    }

    #[test]
    fn kingston_sa04g() {
        // calibration/mmc_registers.csv (Bradford, Flashbenching; docs/SOURCES.md):
        // sysfs manfid 0x000002, oemid 0x544d, name SA04G, serial 0x35338909,
        // date 03/2013, hwrev/fwrev 0x1 (revision 1.1).
        let cid = decode_sd(&raw("02544d5341303447113533890900d371"));
        assert_eq!(cid.manufacturer_id, 0x02);
        assert_eq!(cid.manufacturer_name.as_deref(), Some("Toshiba/Kingston/Viking"));
        assert_eq!(cid.oem_id, "TM");
        assert_eq!(cid.oem_id_raw, 0x544d);
        assert_eq!(cid.product_name, "SA04G");
        assert_eq!(cid.product_revision, "1.1");
        assert_eq!(cid.serial, 0x3533_8909);
        assert_eq!(cid.manufacture_year, 2013);
        assert_eq!(cid.manufacture_month, 3);
        assert_eq!(cid.crc_ok, Some(true));
        assert!(cid.notes.is_empty());
    }

    #[test]
    fn samsung_evo_plus() {
        // A Samsung 32 GB EVO Plus CID with its decoding written out by hand in a
        // public firmware project's header comment: MID 1b, OID "SM", PNM "EB1QT",
        // PRV 30, PSN f1775fea, MDT 0x11a (Oct 2017), CRC7 0x5c.
        let cid = decode_sd(&raw("1b534d454231515430f1775fea011ab9"));
        assert_eq!(cid.manufacturer_id, 0x1b);
        assert_eq!(cid.oem_id, "SM");
        assert_eq!(cid.product_name, "EB1QT");
        assert_eq!(cid.product_revision, "3.0");
        assert_eq!(cid.serial, 0xf177_5fea);
        assert_eq!(cid.manufacture_year, 2017);
        assert_eq!(cid.manufacture_month, 10);
        assert_eq!(cid.crc_ok, Some(true));
    }

    #[test]
    fn sandisk_2gb_from_android_sysfs() {
        // betovar/libmaple libraries/Card/sdcard-verification.md: a SanDisk 2 GB
        // card read from /sys/block/mmcblk*/device/cid on an HTC Eris.
        let cid = decode_sd(&raw("03534453553032478000e22ef4009cfc"));
        assert_eq!(cid.manufacturer_id, 0x03);
        assert_eq!(cid.manufacturer_name.as_deref(), Some("SanDisk"));
        assert_eq!(cid.oem_id, "SD");
        assert_eq!(cid.product_name, "SU02G");
        assert_eq!(cid.product_revision, "8.0");
        assert_eq!(cid.serial, 0x00e2_2ef4);
        assert_eq!(cid.manufacture_year, 2009);
        assert_eq!(cid.manufacture_month, 12);
        // The published dump's last byte is not this CID's CRC7 (the document itself
        // doubts some of its readings); the decoder must say so, not hide it.
        assert_eq!(cid.crc_ok, Some(false));
    }

    #[test]
    fn qemu_emmc() {
        // QEMU hw/sd/sd.c emmc_set_cid: MID 0xaa, CBX BGA, OID 'X', PNM "QEMU!!",
        // PRV 0x01, PSN 0xdeadbeef, MDT month 2 year code 9 (QEMU meant 2006),
        // CRC7 computed by sd_crc7.
        let mut cid_bytes = [
            0xaa, 0x01, b'X', b'Q', b'E', b'M', b'U', b'!', b'!', 0x01, 0xde, 0xad, 0xbe, 0xef, 0x29, 0,
        ];
        cid_bytes[15] = (crate::registers::bits::crc7(&cid_bytes[..15]) << 1) | 1;
        let cid = decode_mmc(&cid_bytes);
        assert_eq!(cid.family, Family::Mmc);
        assert_eq!(cid.manufacturer_id, 0xaa);
        assert_eq!(cid.manufacturer_name, None);
        assert_eq!(cid.device_type.as_deref(), Some("BGA"));
        assert_eq!(cid.oem_id, "0x58");
        assert_eq!(cid.product_name, "QEMU!!");
        assert_eq!(cid.product_revision, "0.1");
        assert_eq!(cid.serial, 0xdead_beef);
        assert_eq!(cid.manufacture_month, 2);
        // Year code 9: 2022 for EXT_CSD_REV >= 5, 2006 (QEMU's intent, a v4.3
        // device) for older parts, which the note says.
        assert_eq!(cid.manufacture_year, 2022);
        assert!(cid.notes[0].contains("2006"), "{:?}", cid.notes);
        assert_eq!(cid.crc_ok, Some(true));
    }

    #[test]
    fn a_nul_padded_name_reads_without_its_padding_and_keeps_its_bytes() {
        let mut bytes = raw("02544d5341303447113533890900d371");
        bytes[5] = 0;
        bytes[6] = 0;
        bytes[7] = 0;
        let cid = decode_sd(&bytes);
        assert_eq!(cid.product_name, "SA");
        assert_eq!(cid.product_name_raw, "5341000000");
        assert_eq!(cid.crc_ok, Some(false));
        assert!(cid.notes.iter().any(|n| n.contains("CRC7 mismatch")), "{:?}", cid.notes);
    }

    #[test]
    fn hostile_bytes_are_escaped_and_flagged() {
        let mut bytes = raw("02544d5341303447113533890900d371");
        bytes[3] = 0x00;
        bytes[4] = 0xff;
        bytes[14] = 0x0f; // month 15
        let cid = decode_sd(&bytes);
        assert_eq!(cid.product_name, "\\x00\\xff04G");
        assert_eq!(cid.manufacture_month, 15);
        assert_eq!(cid.crc_ok, Some(false));
        assert!(cid.notes.iter().any(|n| n.contains("not a month")));
        bytes[15] = 0;
        assert_eq!(decode_sd(&bytes).crc_ok, None);
    }
}
