//! CSD, the card-specific data register: capacity, block lengths, timing and erase
//! geometry. SD Physical Layer Simplified Specification 5.3 (CSD 1.0 for SDSC,
//! 2.0 for SDHC/SDXC, 3.0 for SDUC); JEDEC JESD84-B51 7.3 for MMC/eMMC.

use serde::{Deserialize, Serialize};

use super::Family;
use super::bits::{Bits, crc_ok};

/// A decoded CSD. Raw fields keep their spec names; derived values say their unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Csd {
    pub family: Family,
    /// The raw CSD_STRUCTURE field.
    pub csd_structure: u8,
    /// Human name of the structure ("1.0", "2.0", "3.0"; MMC "1.0"-"1.2" or "EXT_CSD").
    pub version: String,
    /// MMC only: SPEC_VERS (system specification version).
    pub spec_vers: Option<u8>,
    pub taac: u8,
    /// TAAC as nanoseconds (asynchronous part of the read access time).
    pub taac_ns: f64,
    pub nsac: u8,
    pub tran_speed: u8,
    /// TRAN_SPEED as bits per second per data line.
    pub tran_speed_bits_per_sec: u64,
    pub ccc: u16,
    /// Command classes supported (bit n of CCC set = class n).
    pub command_classes: Vec<u8>,
    pub read_bl_len: u8,
    pub read_bl_partial: bool,
    pub write_blk_misalign: bool,
    pub read_blk_misalign: bool,
    pub dsr_imp: bool,
    pub c_size: u32,
    /// CSD 1.0 and MMC only.
    pub c_size_mult: Option<u8>,
    /// SD only: ERASE_BLK_EN.
    pub erase_blk_en: Option<bool>,
    /// SD only: the raw SECTOR_SIZE field (erase sector = SECTOR_SIZE + 1 write blocks).
    pub sector_size: Option<u8>,
    /// MMC only: ERASE_GRP_SIZE and ERASE_GRP_MULT.
    pub erase_grp_size: Option<u8>,
    pub erase_grp_mult: Option<u8>,
    /// The erase unit the CSD describes, in bytes (SD: SECTOR_SIZE; MMC: erase group).
    pub erase_unit_bytes: Option<u64>,
    pub wp_grp_size: u8,
    pub wp_grp_enable: bool,
    pub r2w_factor: u8,
    pub write_bl_len: u8,
    pub write_bl_partial: bool,
    pub file_format_grp: bool,
    pub copy: bool,
    pub perm_write_protect: bool,
    pub tmp_write_protect: bool,
    pub file_format: u8,
    /// User-area capacity; `None` where the CSD cannot say (MMC above 2 GB keeps it
    /// in EXT_CSD SEC_COUNT; reserved structures).
    pub capacity_bytes: Option<u64>,
    pub crc_ok: Option<bool>,
    pub notes: Vec<String>,
}

/// TAAC/TRAN_SPEED time-value multipliers x10, SD spec 5.3.2 tables 5-5 and 5-6.
const SD_MULTIPLIER_X10: [u32; 16] = [0, 10, 12, 13, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 70, 80];
/// The MMC tables differ in two entries (2.6 and 5.2), JESD84-B51 7.3.
const MMC_MULTIPLIER_X10: [u32; 16] = [0, 10, 12, 13, 15, 20, 26, 30, 35, 40, 45, 52, 55, 60, 70, 80];

fn taac_ns(taac: u8, table: &[u32; 16]) -> f64 {
    let unit = 10f64.powi(i32::from(taac & 7)); // 1 ns .. 10 ms
    f64::from(table[usize::from((taac >> 3) & 0xf)]) / 10.0 * unit
}

fn tran_speed_bps(tran: u8, table: &[u32; 16]) -> u64 {
    let unit = match tran & 7 {
        0 => 100_000u64,
        1 => 1_000_000,
        2 => 10_000_000,
        3 => 100_000_000,
        _ => 0, // reserved
    };
    unit * u64::from(table[usize::from((tran >> 3) & 0xf)]) / 10
}

struct Common {
    taac: u8,
    nsac: u8,
    tran: u8,
    ccc: u16,
    read_bl_len: u8,
}

fn common(b: &Bits<'_>) -> Common {
    Common {
        taac: b.field(119, 112) as u8,
        nsac: b.field(111, 104) as u8,
        tran: b.field(103, 96) as u8,
        ccc: b.field(95, 84) as u16,
        read_bl_len: b.field(83, 80) as u8,
    }
}

fn classes(ccc: u16) -> Vec<u8> {
    (0..12u8).filter(|i| ccc & (1 << i) != 0).collect()
}

/// The fields every CSD structure, SD or MMC, keeps at the same bits, with
/// the CRC's note after the decoder's `notes`. The decoder fills in the
/// rest: version, sizes and erase geometry.
fn shared(raw: &[u8; 16], family: Family, multipliers: &[u32; 16], mut notes: Vec<String>) -> Csd {
    let b = Bits(raw);
    let c = common(&b);
    super::bits::crc_note(crc_ok(raw), &mut notes);
    Csd {
        family,
        csd_structure: b.field(127, 126) as u8,
        version: String::new(),
        spec_vers: None,
        taac: c.taac,
        taac_ns: taac_ns(c.taac, multipliers),
        nsac: c.nsac,
        tran_speed: c.tran,
        tran_speed_bits_per_sec: tran_speed_bps(c.tran, multipliers),
        ccc: c.ccc,
        command_classes: classes(c.ccc),
        read_bl_len: c.read_bl_len,
        read_bl_partial: b.flag(79),
        write_blk_misalign: b.flag(78),
        read_blk_misalign: b.flag(77),
        dsr_imp: b.flag(76),
        c_size: 0,
        c_size_mult: None,
        erase_blk_en: None,
        sector_size: None,
        erase_grp_size: None,
        erase_grp_mult: None,
        erase_unit_bytes: None,
        wp_grp_size: 0,
        wp_grp_enable: b.flag(31),
        r2w_factor: b.field(28, 26) as u8,
        write_bl_len: b.field(25, 22) as u8,
        write_bl_partial: b.flag(21),
        file_format_grp: b.flag(15),
        copy: b.flag(14),
        perm_write_protect: b.flag(13),
        tmp_write_protect: b.flag(12),
        file_format: b.field(11, 10) as u8,
        capacity_bytes: None,
        crc_ok: crc_ok(raw),
        notes,
    }
}

/// Decode an SD CSD of any structure version.
pub fn decode_sd(raw: &[u8; 16]) -> Csd {
    let b = Bits(raw);
    let c = common(&b);
    let structure = b.field(127, 126) as u8;
    let write_bl_len = b.field(25, 22) as u8;
    let mut notes = Vec::new();
    let (version, c_size, c_size_mult, capacity) = match structure {
        0 => {
            let c_size = b.field(73, 62) as u32;
            let mult = b.field(49, 47) as u8;
            let capacity =
                (u64::from(c_size) + 1) << (u32::from(mult) + 2 + u32::from(c_size_bl(c.read_bl_len, &mut notes)));
            ("1.0", c_size, Some(mult), Some(capacity))
        }
        1 => {
            let c_size = b.field(69, 48) as u32;
            ("2.0", c_size, None, Some((u64::from(c_size) + 1) * 512 * 1024))
        }
        2 => {
            let c_size = b.field(75, 48) as u32;
            ("3.0", c_size, None, Some((u64::from(c_size) + 1) * 512 * 1024))
        }
        _ => {
            notes.push("CSD_STRUCTURE 3 is reserved: the register may be corrupt".into());
            ("reserved", 0, None, None)
        }
    };
    let erase_blk_en = b.flag(46);
    let sector_size = b.field(45, 39) as u8;
    let erase_unit = if structure <= 2 && write_bl_len <= 11 {
        Some((u64::from(sector_size) + 1) << write_bl_len)
    } else {
        None
    };
    if structure >= 1 && c.taac != 0x0e {
        notes.push(format!("TAAC is 0x{:02x}; CSD {version} fixes it at 0x0e", c.taac));
    }
    Csd {
        version: version.into(),
        c_size,
        c_size_mult,
        erase_blk_en: Some(erase_blk_en),
        sector_size: Some(sector_size),
        erase_unit_bytes: erase_unit,
        wp_grp_size: b.field(38, 32) as u8,
        capacity_bytes: capacity,
        ..shared(raw, Family::Sd, &SD_MULTIPLIER_X10, notes)
    }
}

/// READ_BL_LEN as a shift, clamped to the spec's 9..=11 with a note otherwise so a
/// corrupt register yields a plausible-looking but flagged capacity, never overflow.
fn c_size_bl(read_bl_len: u8, notes: &mut Vec<String>) -> u8 {
    if (9..=11).contains(&read_bl_len) {
        read_bl_len
    } else {
        notes.push(format!(
            "READ_BL_LEN {read_bl_len} is outside 9-11: capacity assumes 512-byte blocks"
        ));
        9
    }
}

/// Decode an MMC/eMMC CSD.
pub fn decode_mmc(raw: &[u8; 16]) -> Csd {
    let b = Bits(raw);
    let c = common(&b);
    let structure = b.field(127, 126) as u8;
    let write_bl_len = b.field(25, 22) as u8;
    let c_size = b.field(73, 62) as u32;
    let mult = b.field(49, 47) as u8;
    let grp_size = b.field(46, 42) as u8;
    let grp_mult = b.field(41, 37) as u8;
    let mut notes = Vec::new();
    let capacity = if c_size == 0xfff {
        notes.push("C_SIZE is 0xFFF: capacity is above 2 GB and lives in EXT_CSD SEC_COUNT".into());
        None
    } else {
        Some((u64::from(c_size) + 1) << (u32::from(mult) + 2 + u32::from(c_size_bl(c.read_bl_len, &mut notes))))
    };
    let version = match structure {
        0 => "1.0",
        1 => "1.1",
        2 => "1.2",
        _ => "EXT_CSD",
    };
    let erase_unit =
        (write_bl_len <= 11).then(|| ((u64::from(grp_size) + 1) * (u64::from(grp_mult) + 1)) << write_bl_len);
    Csd {
        version: version.into(),
        spec_vers: Some(b.field(125, 122) as u8),
        c_size,
        c_size_mult: Some(mult),
        erase_grp_size: Some(grp_size),
        erase_grp_mult: Some(grp_mult),
        erase_unit_bytes: erase_unit,
        wp_grp_size: b.field(36, 32) as u8,
        capacity_bytes: capacity,
        ..shared(raw, Family::Mmc, &MMC_MULTIPLIER_X10, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(hex: &str) -> [u8; 16] {
        crate::registers::hex::raw(hex, "CSD")
    }

    #[test]
    fn kingston_sa04g_v2() {
        // calibration/mmc_registers.csv: fdisk says 3904897024 bytes.
        let csd = decode_sd(&raw("400e00325b5900001d177f800a40008d"));
        assert_eq!(csd.csd_structure, 1);
        assert_eq!(csd.version, "2.0");
        assert_eq!(csd.taac, 0x0e);
        assert_eq!(csd.taac_ns, 1_000_000.0);
        assert_eq!(csd.nsac, 0);
        assert_eq!(csd.tran_speed, 0x32);
        assert_eq!(csd.tran_speed_bits_per_sec, 25_000_000);
        assert_eq!(csd.ccc, 0x5b5);
        assert_eq!(csd.command_classes, vec![0, 2, 4, 5, 7, 8, 10]);
        assert_eq!(csd.read_bl_len, 9);
        assert_eq!(csd.c_size, 7447);
        assert_eq!(csd.c_size_mult, None);
        assert_eq!(csd.sector_size, Some(0x7f));
        assert_eq!(csd.erase_blk_en, Some(true));
        assert_eq!(csd.erase_unit_bytes, Some(64 * 1024));
        assert_eq!(csd.write_bl_len, 9);
        assert_eq!(csd.r2w_factor, 2);
        assert_eq!(csd.capacity_bytes, Some(3_904_897_024));
        assert_eq!(csd.crc_ok, Some(true));
        assert!(csd.notes.is_empty(), "{:?}", csd.notes);
    }

    #[test]
    fn embedded_sdmmc_v1_1gb() {
        // embedded-sdmmc-rs src/sdcard/proto.rs test_csdv1b: a real card, decoded
        // there field by field (TAAC 0x26 = 1.5 ms, C_SIZE 3874, C_SIZE_MULT 7,
        // SECTOR_SIZE 0x1f, R2W 4, 1_015_808_000 bytes, CRC 0xa5).
        let csd = decode_sd(&raw("002600325f5983c8addbcfffd24040a5"));
        assert_eq!(csd.csd_structure, 0);
        assert_eq!(csd.version, "1.0");
        assert_eq!(csd.taac, 0x26);
        assert_eq!(csd.taac_ns, 1_500_000.0);
        assert_eq!(csd.ccc, 0x5f5);
        assert_eq!(csd.read_bl_len, 9);
        assert!(csd.read_bl_partial);
        assert!(!csd.write_blk_misalign && !csd.read_blk_misalign && !csd.dsr_imp);
        assert_eq!(csd.c_size, 3874);
        assert_eq!(csd.c_size_mult, Some(7));
        assert_eq!(csd.erase_blk_en, Some(true));
        assert_eq!(csd.sector_size, Some(0x1f));
        assert_eq!(csd.erase_unit_bytes, Some(32 * 512));
        assert_eq!(csd.wp_grp_size, 0x7f);
        assert!(csd.wp_grp_enable);
        assert_eq!(csd.r2w_factor, 4);
        assert_eq!(csd.write_bl_len, 9);
        assert!(csd.copy);
        assert_eq!(csd.capacity_bytes, Some(1_015_808_000));
        assert_eq!(csd.crc_ok, Some(true));
    }

    #[test]
    fn embedded_sdmmc_v1_2gb_1k_blocks() {
        // embedded-sdmmc-rs test_csdv1: TAAC 0x7f, READ_BL_LEN 10, C_SIZE 3773,
        // C_SIZE_MULT 7, WRITE_BL_LEN 10, R2W 5, 1_978_662_912 bytes, CRC 0x6f.
        let csd = decode_sd(&raw("007f00325b5a83af7fffcf801680006f"));
        assert_eq!(csd.taac, 0x7f);
        assert_eq!(csd.taac_ns, 80_000_000.0);
        assert_eq!(csd.ccc, 0x5b5);
        assert_eq!(csd.read_bl_len, 10);
        assert_eq!(csd.c_size, 3773);
        assert_eq!(csd.c_size_mult, Some(7));
        assert_eq!(csd.sector_size, Some(0x1f));
        assert_eq!(csd.wp_grp_size, 0);
        assert!(!csd.wp_grp_enable);
        assert_eq!(csd.r2w_factor, 5);
        assert_eq!(csd.write_bl_len, 10);
        assert_eq!(csd.erase_unit_bytes, Some(32 * 1024));
        assert_eq!(csd.capacity_bytes, Some(1_978_662_912));
        assert_eq!(csd.crc_ok, Some(true));
    }

    #[test]
    fn embedded_sdmmc_v2_4gb() {
        // embedded-sdmmc-rs test_csdv2: C_SIZE 7529, 3_947_888_640 bytes, CRC 0x8b.
        let csd = decode_sd(&raw("400e00325b5900001d697f800a40008b"));
        assert_eq!(csd.c_size, 7529);
        assert_eq!(csd.capacity_bytes, Some(3_947_888_640));
        assert_eq!(csd.crc_ok, Some(true));
    }

    #[test]
    fn sandisk_2gb_from_android_sysfs() {
        // betovar/libmaple sdcard-verification.md, "SanDisk 2GB": a CSD 1.0 read
        // from sysfs; C_SIZE 0xebb, C_SIZE_MULT 7, READ_BL_LEN 10.
        let csd = decode_sd(&raw("002600325f5a83aefefbcfff928040de"));
        assert_eq!(csd.version, "1.0");
        assert_eq!(csd.read_bl_len, 10);
        assert_eq!(csd.c_size, 0xebb);
        assert_eq!(csd.c_size_mult, Some(7));
        assert_eq!(csd.capacity_bytes, Some(3772 * 512 * 1024));
        assert_eq!(csd.write_bl_len, 10);
    }

    #[test]
    fn sduc_v3_capacity_uses_28_bit_c_size() {
        // CSD 3.0 (SD spec 5.3.4): C_SIZE [75:48]; capacity (C_SIZE+1) x 512 KiB.
        let mut bytes = raw("400e00325b5900001d177f800a40008d");
        bytes[0] = 0x80;
        bytes[6] = 0x0a; // C_SIZE bits [75:72] = 0xa
        let csd = decode_sd(&bytes);
        assert_eq!(csd.version, "3.0");
        assert_eq!(csd.c_size, 0x0a00_1d17);
        assert_eq!(csd.capacity_bytes, Some((0x0a00_1d17u64 + 1) * 512 * 1024));
    }

    #[test]
    fn reserved_structure_and_bad_block_length_are_flagged() {
        let mut bytes = raw("002600325f5983c8addbcfffd24040a5");
        bytes[0] = 0xc0;
        let csd = decode_sd(&bytes);
        assert_eq!(csd.version, "reserved");
        assert_eq!(csd.capacity_bytes, None);
        let mut bytes = raw("002600325f5983c8addbcfffd24040a5");
        bytes[5] = 0x5f; // READ_BL_LEN 15
        let csd = decode_sd(&bytes);
        assert!(csd.notes.iter().any(|n| n.contains("READ_BL_LEN 15")));
        assert_eq!(csd.capacity_bytes, Some(1_015_808_000));
    }

    #[test]
    fn mmc_csd_fields() {
        // An eMMC CSD built field by field (JESD84-B51 7.3): structure 3, SPEC_VERS 4,
        // TAAC 0x27 (value 4 = 1.5, unit 7 = 10 ms: 15 ms), TRAN_SPEED
        // 0x32 (value 6 = 2.6 on MMC -> 26 Mbit/s), C_SIZE 0xfff (capacity in EXT_CSD),
        // ERASE_GRP_SIZE 31, ERASE_GRP_MULT 31 (1024 x 512 B = 512 KiB).
        let mut bytes = [0u8; 16];
        bytes[0] = 0xd0; // structure 3, spec_vers 4
        bytes[1] = 0x27;
        bytes[2] = 0x01;
        bytes[3] = 0x32;
        bytes[4] = 0x0f; // CCC high bits
        bytes[5] = 0x59; // CCC low nibble 5, READ_BL_LEN 9
        bytes[6] = 0x03; // C_SIZE [73:72] = 11
        bytes[7] = 0xff; // C_SIZE [71:64]
        bytes[8] = 0xc0; // C_SIZE [63:62] = 11
        bytes[9] = 0x03; // C_SIZE_MULT [49:48] = 11
        bytes[10] = 0xff; // MULT [47] = 1, ERASE_GRP_SIZE [46:42] = 11111, MULT hi bits
        bytes[11] = 0xe0; // ERASE_GRP_MULT low bits [39:37] = 111
        bytes[12] = 0x02; // WRITE_BL_LEN [25:24] = 10
        bytes[13] = 0x40; // WRITE_BL_LEN [23:22] = 01 -> 9
        let csd = decode_mmc(&bytes);
        assert_eq!(csd.csd_structure, 3);
        assert_eq!(csd.version, "EXT_CSD");
        assert_eq!(csd.spec_vers, Some(4));
        assert_eq!(csd.taac_ns, 15_000_000.0);
        assert_eq!(csd.nsac, 1);
        assert_eq!(csd.tran_speed_bits_per_sec, 26_000_000);
        assert_eq!(csd.ccc, 0x0f5);
        assert_eq!(csd.c_size, 0xfff);
        assert_eq!(csd.c_size_mult, Some(7));
        assert_eq!(csd.erase_grp_size, Some(31));
        assert_eq!(csd.erase_grp_mult, Some(31));
        assert_eq!(csd.write_bl_len, 9);
        assert_eq!(csd.erase_unit_bytes, Some(512 * 1024));
        assert_eq!(csd.capacity_bytes, None);
        assert!(csd.notes[0].contains("EXT_CSD"));
    }
}
