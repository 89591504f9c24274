//! SCR, the SD configuration register (SD Physical Layer Simplified Specification
//! 5.6): which spec version the card claims, its bus widths and optional commands.

use serde::{Deserialize, Serialize};

use super::bits::Bits;

/// A decoded SCR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scr {
    pub scr_structure: u8,
    pub sd_spec: u8,
    pub sd_spec3: bool,
    pub sd_spec4: bool,
    pub sd_specx: u8,
    /// The physical layer version the fields combine to (SD spec table 5-17).
    pub spec_version: String,
    pub data_stat_after_erase: u8,
    pub sd_security: u8,
    pub security: String,
    /// Supported data bus widths in bits (1 and/or 4).
    pub bus_widths: Vec<u8>,
    pub ex_security: u8,
    /// CMD20 (speed class control), CMD23 (set block count), CMD48/49 and CMD58/59
    /// (extension registers).
    pub cmd20: bool,
    pub cmd23: bool,
    pub cmd48_49: bool,
    pub cmd58_59: bool,
    pub notes: Vec<String>,
}

/// Decode an 8-byte SCR.
pub fn decode(raw: &[u8; 8]) -> Scr {
    let b = Bits(raw);
    let sd_spec = b.field(59, 56) as u8;
    let sd_spec3 = b.flag(47);
    let sd_spec4 = b.flag(42);
    let sd_specx = b.field(41, 38) as u8;
    let spec_version = match (sd_spec, sd_spec3, sd_spec4, sd_specx) {
        (0, false, false, 0) => "1.0/1.01",
        (1, false, false, 0) => "1.10",
        (2, false, false, 0) => "2.00",
        (2, true, false, 0) => "3.0x",
        (2, true, true, 0) => "4.xx",
        (2, true, _, 1) => "5.xx",
        (2, true, _, 2) => "6.xx",
        (2, true, _, 3) => "7.xx",
        (2, true, _, 4) => "8.xx",
        (2, true, _, 5) => "9.xx",
        _ => "unknown",
    };
    let sd_security = b.field(54, 52) as u8;
    let security = match sd_security {
        0 => "none",
        1 => "not used",
        2 => "SDSC (security v1.01)",
        3 => "SDHC (security v2.00)",
        4 => "SDXC (security v3.xx)",
        _ => "reserved",
    };
    let widths = b.field(51, 48);
    let bus_widths = [(0, 1u8), (2, 4u8)]
        .into_iter()
        .filter(|(bit, _)| widths & (1 << bit) != 0)
        .map(|(_, w)| w)
        .collect::<Vec<_>>();
    let mut notes = Vec::new();
    if spec_version == "unknown" {
        notes.push("SD_SPEC/SD_SPEC3/SD_SPEC4/SD_SPECX combine to no defined version".into());
    }
    if b.field(63, 60) != 0 {
        notes.push("SCR_STRUCTURE is not 0 (the only defined version)".into());
    }
    if !bus_widths.contains(&1) || !bus_widths.contains(&4) {
        notes.push("every SD card must support 1- and 4-bit buses; this SCR does not say so".into());
    }
    let cmds = b.field(35, 32);
    Scr {
        scr_structure: b.field(63, 60) as u8,
        sd_spec,
        sd_spec3,
        sd_spec4,
        sd_specx,
        spec_version: spec_version.into(),
        data_stat_after_erase: b.field(55, 55) as u8,
        sd_security,
        security: security.into(),
        bus_widths,
        ex_security: b.field(46, 43) as u8,
        cmd20: cmds & 1 != 0,
        cmd23: cmds & 2 != 0,
        cmd48_49: cmds & 4 != 0,
        cmd58_59: cmds & 8 != 0,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(hex: &str) -> [u8; 8] {
        crate::registers::hex::raw(hex, "SCR")
    }

    #[test]
    fn kingston_sa04g() {
        // calibration/mmc_registers.csv: scr 0235800001000000.
        let scr = decode(&raw("0235800001000000"));
        assert_eq!(scr.scr_structure, 0);
        assert_eq!(scr.sd_spec, 2);
        assert!(scr.sd_spec3);
        assert!(!scr.sd_spec4);
        assert_eq!(scr.spec_version, "3.0x");
        assert_eq!(scr.sd_security, 3);
        assert_eq!(scr.security, "SDHC (security v2.00)");
        assert_eq!(scr.bus_widths, vec![1, 4]);
        assert!(!scr.cmd20 && !scr.cmd23);
        assert!(scr.notes.is_empty());
    }

    #[test]
    fn android_sysfs_cards() {
        // betovar/libmaple sdcard-verification.md: "ATP 2GB" and "SanDisk 8GB".
        let atp = decode(&raw("0125000000000000"));
        assert_eq!(atp.spec_version, "1.10");
        assert_eq!(atp.sd_security, 2);
        assert_eq!(atp.bus_widths, vec![1, 4]);
        let sandisk8 = decode(&raw("0235800100000000"));
        assert_eq!(sandisk8.spec_version, "3.0x");
        assert!(sandisk8.cmd20);
        assert!(!sandisk8.cmd23);
    }

    #[test]
    fn modern_specx_and_commands() {
        // SD 6.x card: SD_SPEC 2, SPEC3 1, SPEC4 1, SPECX 2, CMD23 and CMD48/49.
        // Byte 2 = SPEC3(1) EX_SECURITY(0000) SPEC4(1) SPECX[3:2](00); byte 3 =
        // SPECX[1:0](10) reserved(00) CMD_SUPPORT(0110).
        let scr = decode(&[0x02, 0x45, 0x84, 0x86, 0, 0, 0, 0]);
        assert_eq!(scr.sd_specx, 2);
        assert_eq!(scr.spec_version, "6.xx");
        assert_eq!(scr.security, "SDXC (security v3.xx)");
        assert!(scr.cmd23 && scr.cmd48_49 && !scr.cmd20 && !scr.cmd58_59);
    }
}
