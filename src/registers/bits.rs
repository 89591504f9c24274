//! Bit fields of SD/MMC registers, addressed the way the specifications write them:
//! `[high:low]`, bit 0 being the least significant bit of the last byte.

/// A register's raw bytes, most significant byte first (as sysfs prints them).
#[derive(Debug, Clone, Copy)]
pub struct Bits<'a>(pub &'a [u8]);

impl Bits<'_> {
    /// The field `[high:low]` (inclusive), at most 64 bits wide.
    pub fn field(&self, high: u32, low: u32) -> u64 {
        assert!(high >= low && high - low < 64);
        let total = self.0.len() as u32 * 8;
        assert!(high < total);
        let mut value = 0u64;
        for bit in (low..=high).rev() {
            let byte = self.0[((total - 1 - bit) / 8) as usize];
            value = (value << 1) | u64::from((byte >> (bit % 8)) & 1);
        }
        value
    }

    /// A one-bit flag.
    pub fn flag(&self, bit: u32) -> bool {
        self.field(bit, bit) == 1
    }

    /// Bytes `[high:low]` (byte-aligned) as text, non-printable bytes escaped.
    /// The raw bytes of a text field, in register order.
    pub fn bytes(&self, high: u32, low: u32) -> &[u8] {
        let total = self.0.len() as u32 * 8;
        let first = ((total - 1 - high) / 8) as usize;
        let last = ((total - 1 - low) / 8) as usize;
        &self.0[first..=last]
    }

    /// A name field: padding (NUL or spaces at the end) dropped, the rest
    /// escaped (`escape_ascii`).
    pub fn name(&self, high: u32, low: u32) -> String {
        let b = self.bytes(high, low);
        let end = b.iter().rposition(|&c| c != 0 && c != b' ').map_or(0, |i| i + 1);
        escape_ascii(&b[..end])
    }

    pub fn text(&self, high: u32, low: u32) -> String {
        assert!((high + 1).is_multiple_of(8) && low.is_multiple_of(8));
        let total = self.0.len() as u32 * 8;
        let first = ((total - 1 - high) / 8) as usize;
        let last = ((total - 1 - low) / 8) as usize;
        escape_ascii(&self.0[first..=last])
    }
}

/// Printable ASCII as is, backslash doubled, everything else as `\xNN`, so a
/// corrupt or hostile register can never garble a terminal or break JSON.
pub fn escape_ascii(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// CRC7 (polynomial x^7 + x^3 + 1) over the first 15 bytes of a CID or CSD,
/// SD Physical Layer Simplified Specification section 4.5.
pub fn crc7(bytes: &[u8]) -> u8 {
    let mut crc = 0u8;
    for &byte in bytes {
        for i in (0..8).rev() {
            let bit = (byte >> i) & 1;
            let top = (crc >> 6) & 1;
            crc = (crc << 1) & 0x7f;
            if bit ^ top == 1 {
                crc ^= 0x09;
            }
        }
    }
    crc
}

/// Whether the last byte of a 16-byte CID/CSD holds a valid CRC7 and end bit.
/// `None` when the byte is zero: many host drivers strip the CRC before Linux
/// exports the register, so zero means "not available", not "corrupt".
pub fn crc_ok(register: &[u8; 16]) -> Option<bool> {
    if register[15] == 0 {
        return None;
    }
    Some(register[15] == (crc7(&register[..15]) << 1) | 1)
}

/// The note a CRC7 mismatch gets: the fields may not be what the card holds.
pub fn crc_note(ok: Option<bool>, notes: &mut Vec<String>) {
    if ok == Some(false) {
        notes.push(
            "CRC7 mismatch: the last byte is not the checksum of the others, so a byte was changed on the way \
             (a copy error, a reader or driver that altered it); the fields may not be what the card holds"
                .into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_follow_spec_bit_numbering() {
        let bytes = [0x40, 0x0e, 0x00, 0x32];
        let b = Bits(&bytes);
        assert_eq!(b.field(31, 30), 1);
        assert_eq!(b.field(23, 16), 0x0e);
        assert_eq!(b.field(7, 0), 0x32);
        assert_eq!(b.field(5, 1), 0x19);
        assert!(b.flag(30));
        assert!(!b.flag(31));
    }

    #[test]
    fn crc7_of_published_csd() {
        // embedded-sdmmc-rs src/sdcard/proto.rs test_crc7: a real card's CSD whose
        // CRC byte (crc7 << 1 | 1) is 0xa5.
        let data = [
            0x00, 0x26, 0x00, 0x32, 0x5f, 0x59, 0x83, 0xc8, 0xad, 0xdb, 0xcf, 0xff, 0xd2, 0x40, 0x40,
        ];
        assert_eq!((crc7(&data) << 1) | 1, 0xa5);
    }

    #[test]
    fn escapes_non_printables() {
        assert_eq!(escape_ascii(b"SA04G"), "SA04G");
        assert_eq!(escape_ascii(&[0x00, b'A', 0xff, b'\\']), "\\x00A\\xff\\\\");
    }
}
