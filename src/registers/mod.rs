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
