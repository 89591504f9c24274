//! SD/MMC register decoding, shared by `flashlab decode` (offline, pasted hex) and
//! `flashlab info` (sysfs of a live card, or a simulated card's registers).

pub mod bits;
pub mod cid;
pub mod csd;
pub mod hex;
pub mod manufacturers;
pub mod scr;
pub mod ssr;

use serde::{Deserialize, Serialize};

/// Which specification lays out a register: SD cards and MMC/eMMC differ in CID
/// and CSD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Sd,
    Mmc,
}

/// Which register a hex string holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterKind {
    Cid,
    Csd,
    Scr,
    Ssr,
}

impl RegisterKind {
    /// Size in bytes: CID and CSD 128 bits, SCR 64, SSR 512.
    pub fn byte_len(self) -> usize {
        match self {
            RegisterKind::Cid | RegisterKind::Csd => 16,
            RegisterKind::Scr => 8,
            RegisterKind::Ssr => 64,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RegisterKind::Cid => "CID",
            RegisterKind::Csd => "CSD",
            RegisterKind::Scr => "SCR",
            RegisterKind::Ssr => "SSR",
        }
    }
}

/// Any decoded register, serialised as the register object itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Decoded {
    Cid(cid::Cid),
    Csd(csd::Csd),
    Scr(scr::Scr),
    Ssr(ssr::Ssr),
}

/// Why a register could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    #[error(transparent)]
    Hex(#[from] hex::HexError),
    #[error("{0} has no MMC layout (it is an SD-only register)")]
    NotMmc(&'static str),
}

/// Decode register hex of the given kind and family.
pub fn decode(kind: RegisterKind, family: Family, text: &str) -> Result<Decoded, RegisterError> {
    let bytes = hex::parse_register(text, kind.name(), kind.byte_len())?;
    decode_bytes(kind, family, &bytes)
}

/// Whether a decoded CID or CSD reads like one (the fields the
/// specifications fix or bound hold); `None` for SCR and SSR. A CID pasted
/// as a CSD (both are 16 bytes) decodes without error into nonsense: a
/// CSD version 1.0 whose READ_BL_LEN is 3, a capacity of kilobytes.
pub fn plausible(d: &Decoded) -> Option<bool> {
    match d {
        Decoded::Csd(c) => Some(
            c.csd_structure < 3
                && (9..=11).contains(&c.read_bl_len)
                && c.write_bl_len == c.read_bl_len
                && c.capacity_bytes.is_some_and(|b| b >= 1 << 20),
        ),
        Decoded::Cid(c) => Some(
            !c.product_name.is_empty()
                && c.product_name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || " -_.".contains(ch))
                && (1..=12).contains(&c.manufacture_month),
        ),
        Decoded::Scr(_) | Decoded::Ssr(_) => None,
    }
}

/// When `d` (decoded as `kind`) is implausible but its bytes read well as
/// the other 16-byte register, a note saying so.
pub fn mistaken_for(kind: RegisterKind, family: Family, bytes: &[u8], d: &Decoded) -> Option<String> {
    let other = match kind {
        RegisterKind::Cid => RegisterKind::Csd,
        RegisterKind::Csd => RegisterKind::Cid,
        RegisterKind::Scr | RegisterKind::Ssr => return None,
    };
    if plausible(d) != Some(false) {
        return None;
    }
    let o = decode_bytes(other, family, bytes).ok()?;
    if plausible(&o) != Some(true) {
        return None;
    }
    let what = match &o {
        Decoded::Cid(c) => format!(
            "{} {} made {}-{:02}",
            c.manufacturer_name.as_deref().unwrap_or("a card"),
            c.product_name,
            c.manufacture_year,
            c.manufacture_month
        ),
        Decoded::Csd(c) => format!("CSD {} of {} bytes", c.version, c.capacity_bytes.unwrap_or(0)),
        Decoded::Scr(_) | Decoded::Ssr(_) => return None,
    };
    Some(format!(
        "these bytes do not read as a {k} but do as a {o} ({what}): was it `flashlab decode {ol} ...`?",
        k = kind.name(),
        o = other.name(),
        ol = other.name().to_ascii_lowercase()
    ))
}

/// Decode register bytes already of the right length.
pub fn decode_bytes(kind: RegisterKind, family: Family, bytes: &[u8]) -> Result<Decoded, RegisterError> {
    let wrong = || hex::HexError::WrongLength {
        register: kind.name(),
        expected: kind.byte_len(),
        got: bytes.len(),
    };
    Ok(match (kind, family) {
        (RegisterKind::Cid, Family::Sd) => Decoded::Cid(cid::decode_sd(bytes.try_into().map_err(|_| wrong())?)),
        (RegisterKind::Cid, Family::Mmc) => Decoded::Cid(cid::decode_mmc(bytes.try_into().map_err(|_| wrong())?)),
        (RegisterKind::Csd, Family::Sd) => Decoded::Csd(csd::decode_sd(bytes.try_into().map_err(|_| wrong())?)),
        (RegisterKind::Csd, Family::Mmc) => Decoded::Csd(csd::decode_mmc(bytes.try_into().map_err(|_| wrong())?)),
        (RegisterKind::Scr, Family::Sd) => Decoded::Scr(scr::decode(bytes.try_into().map_err(|_| wrong())?)),
        (RegisterKind::Ssr, Family::Sd) => Decoded::Ssr(ssr::decode(bytes.try_into().map_err(|_| wrong())?)),
        (RegisterKind::Scr | RegisterKind::Ssr, Family::Mmc) => return Err(RegisterError::NotMmc(kind.name())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Kingston SA04G's CID and a 16 GB SDHC's CSD (tests/integration/decode.rs).
    const CID: &str = "02544d5341303447113533890900d371";
    const CSD: &str = "400e00325b59000076b27f800a404000";

    fn both(kind: RegisterKind, text: &str) -> (Decoded, Option<String>) {
        let bytes = hex::parse_register(text, kind.name(), 16).unwrap();
        let d = decode_bytes(kind, Family::Sd, &bytes).unwrap();
        let note = mistaken_for(kind, Family::Sd, &bytes, &d);
        (d, note)
    }

    #[test]
    fn a_cid_given_as_a_csd_and_a_csd_given_as_a_cid_are_named() {
        let (d, note) = both(RegisterKind::Cid, CID);
        assert_eq!(plausible(&d), Some(true));
        assert_eq!(note, None);
        let (d, note) = both(RegisterKind::Csd, CSD);
        assert_eq!(plausible(&d), Some(true));
        assert_eq!(note, None);
        let (d, note) = both(RegisterKind::Csd, CID);
        assert_eq!(plausible(&d), Some(false));
        let note = note.unwrap();
        assert!(
            note.contains("do as a CID (Toshiba/Kingston/Viking SA04G made 2013-03)"),
            "{note}"
        );
        assert!(note.contains("`flashlab decode cid ...`"), "{note}");
        let (_, note) = both(RegisterKind::Cid, CSD);
        assert!(note.unwrap().contains("do as a CSD (CSD 2.0 of 15931539456 bytes)"));
    }
}
