//! SSR, the 512-bit SD status register (SD Physical Layer Simplified Specification
//! 4.10.2): allocation unit size, speed class, UHS grade, video and application
//! performance classes, erase timing. Linux exports it as sysfs `ssr` (16 words).

use serde::{Deserialize, Serialize};

use super::bits::Bits;

/// A decoded SSR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ssr {
    /// Current data bus width in bits (1 or 4), from DAT_BUS_WIDTH.
    pub bus_width: Option<u8>,
    pub secured_mode: bool,
    /// SD_CARD_TYPE: 0 regular read/write, 1 ROM, 2 OTP.
    pub sd_card_type: u16,
    pub size_of_protected_area: u32,
    /// The raw SPEED_CLASS field.
    pub speed_class_raw: u8,
    /// Speed class as the number printed on the card (0, 2, 4, 6, 10).
    pub speed_class: Option<u8>,
    /// PERFORMANCE_MOVE in MB/s (0: not defined, 255: infinite).
    pub performance_move: u8,
    /// The raw AU_SIZE field.
    pub au_size_raw: u8,
    /// Allocation unit in bytes (SD spec table 4-47); what flashlab's align and
    /// open-au tests measure, and what Linux uses for preferred_erase_size.
    pub au_size_bytes: Option<u64>,
    /// ERASE_SIZE: number of AUs erased at once for the timeout calculation.
    pub erase_size_aus: u16,
    pub erase_timeout_s: u8,
    pub erase_offset_s: u8,
    /// UHS_SPEED_GRADE as the U number (0, 1, 3).
    pub uhs_speed_grade: u8,
    pub uhs_au_size_bytes: Option<u64>,
    /// VIDEO_SPEED_CLASS as the V number (0, 6, 10, 30, 60, 90).
    pub video_speed_class: u8,
    pub vsc_au_size_mib: u16,
    pub sus_addr: u32,
    /// APP_PERF_CLASS: "A1", "A2", or null.
    pub app_perf_class: Option<String>,
    pub performance_enhance: u8,
    pub discard_support: bool,
    pub fule_support: bool,
    pub notes: Vec<String>,
}

/// AU_SIZE code to bytes, SD spec 4.10.2.4 table 4-47 (16 KiB .. 64 MiB, with the
/// non-power-of-two 12 MiB and 24 MiB).
pub fn au_code_bytes(code: u8) -> Option<u64> {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    Some(match code {
        1 => 16 * KIB,
        2 => 32 * KIB,
        3 => 64 * KIB,
        4 => 128 * KIB,
        5 => 256 * KIB,
        6 => 512 * KIB,
        7 => MIB,
        8 => 2 * MIB,
        9 => 4 * MIB,
        0xa => 8 * MIB,
        0xb => 12 * MIB,
        0xc => 16 * MIB,
        0xd => 24 * MIB,
        0xe => 32 * MIB,
        0xf => 64 * MIB,
        _ => return None,
    })
}

/// Decode a 64-byte SSR.
pub fn decode(raw: &[u8; 64]) -> Ssr {
    let b = Bits(raw);
    let mut notes = Vec::new();
    let bus_width = match b.field(511, 510) {
        0 => Some(1),
        2 => Some(4),
        _ => {
            notes.push("DAT_BUS_WIDTH holds a reserved value".into());
            None
        }
    };
    let speed_class_raw = b.field(447, 440) as u8;
    let speed_class = match speed_class_raw {
        0 => Some(0),
        1 => Some(2),
        2 => Some(4),
        3 => Some(6),
        4 => Some(10),
        _ => {
            notes.push(format!("SPEED_CLASS {speed_class_raw} is reserved"));
            None
        }
    };
    let au_size_raw = b.field(431, 428) as u8;
    let au_size_bytes = au_code_bytes(au_size_raw);
    if au_size_raw == 0 {
        notes.push("AU_SIZE is 0 (not defined): the card does not state its allocation unit".into());
    }
    let uhs_au = b.field(395, 392) as u8;
    let uhs_speed_grade = b.field(399, 396) as u8;
    if !matches!(uhs_speed_grade, 0 | 1 | 3) {
        notes.push(format!("UHS_SPEED_GRADE {uhs_speed_grade} is reserved"));
    }
    let video_speed_class = b.field(391, 384) as u8;
    if !matches!(video_speed_class, 0 | 6 | 10 | 30 | 60 | 90) {
        notes.push(format!("VIDEO_SPEED_CLASS {video_speed_class} is reserved"));
    }
    let app_perf_class = match b.field(339, 336) {
        0 => None,
        1 => Some("A1"),
        2 => Some("A2"),
        other => {
            notes.push(format!("APP_PERF_CLASS {other} is reserved"));
            None
        }
    };
    Ssr {
        bus_width,
        secured_mode: b.flag(509),
        sd_card_type: b.field(495, 480) as u16,
        size_of_protected_area: b.field(479, 448) as u32,
        speed_class_raw,
        speed_class,
        performance_move: b.field(439, 432) as u8,
        au_size_raw,
        au_size_bytes,
        erase_size_aus: b.field(423, 408) as u16,
        erase_timeout_s: b.field(407, 402) as u8,
        erase_offset_s: b.field(401, 400) as u8,
        uhs_speed_grade,
        // UHS_AU_SIZE only defines codes 7 (1 MiB) and up.
        uhs_au_size_bytes: if uhs_au >= 7 { au_code_bytes(uhs_au) } else { None },
        video_speed_class,
        vsc_au_size_mib: b.field(377, 368) as u16,
        sus_addr: b.field(367, 346) as u32,
        app_perf_class: app_perf_class.map(String::from),
        performance_enhance: b.field(335, 328) as u8,
        discard_support: b.flag(313),
        fule_support: b.flag(312),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set bits `[high:low]` of a 512-bit register to `value`.
    fn put(raw: &mut [u8; 64], high: u32, low: u32, value: u64) {
        for bit in low..=high {
            let byte = (511 - bit) / 8;
            let mask = 1u8 << (bit % 8);
            if (value >> (bit - low)) & 1 == 1 {
                raw[byte as usize] |= mask;
            } else {
                raw[byte as usize] &= !mask;
            }
        }
    }

    #[test]
    fn a1_v30_u3_card() {
        // A present-day A1/V30/U3 microSDXC, built field by field from SD spec
        // 4.10.2 (no public SSR dump with a published decoding was found).
        let mut raw = [0u8; 64];
        put(&mut raw, 511, 510, 2);
        put(&mut raw, 447, 440, 4);
        put(&mut raw, 439, 432, 0);
        put(&mut raw, 431, 428, 9);
        put(&mut raw, 423, 408, 0x0800);
        put(&mut raw, 407, 402, 0x1e);
        put(&mut raw, 401, 400, 1);
        put(&mut raw, 399, 396, 3);
        put(&mut raw, 395, 392, 9);
        put(&mut raw, 391, 384, 30);
        put(&mut raw, 377, 368, 8);
        put(&mut raw, 339, 336, 1);
        put(&mut raw, 313, 313, 1);
        let ssr = decode(&raw);
        assert_eq!(ssr.bus_width, Some(4));
        assert_eq!(ssr.speed_class, Some(10));
        assert_eq!(ssr.au_size_bytes, Some(4 << 20));
        assert_eq!(ssr.erase_size_aus, 0x800);
        assert_eq!(ssr.erase_timeout_s, 0x1e);
        assert_eq!(ssr.erase_offset_s, 1);
        assert_eq!(ssr.uhs_speed_grade, 3);
        assert_eq!(ssr.uhs_au_size_bytes, Some(4 << 20));
        assert_eq!(ssr.video_speed_class, 30);
        assert_eq!(ssr.vsc_au_size_mib, 8);
        assert_eq!(ssr.app_perf_class.as_deref(), Some("A1"));
        assert!(ssr.discard_support);
        assert!(!ssr.fule_support);
        assert!(ssr.notes.is_empty(), "{:?}", ssr.notes);
    }

    #[test]
    fn non_power_of_two_au_codes() {
        assert_eq!(au_code_bytes(0xb), Some(12 << 20));
        assert_eq!(au_code_bytes(0xd), Some(24 << 20));
        assert_eq!(au_code_bytes(0), None);
    }

    #[test]
    fn reserved_values_are_noted_not_fatal() {
        let mut raw = [0xffu8; 64];
        put(&mut raw, 339, 336, 7);
        let ssr = decode(&raw);
        assert_eq!(ssr.bus_width, None);
        assert_eq!(ssr.speed_class, None);
        assert_eq!(ssr.app_perf_class, None);
        assert!(ssr.notes.len() >= 4, "{:?}", ssr.notes);
        let empty = decode(&[0u8; 64]);
        assert_eq!(empty.au_size_bytes, None);
        assert!(empty.notes.iter().any(|n| n.contains("AU_SIZE is 0")));
    }
}
