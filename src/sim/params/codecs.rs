//! How each kind of value is read from text (a profile, TOML, an `,key=value`
//! override) and written back as TOML text: one codec per kind, named in the
//! [`params!`](super) table beside each key.

use super::{Cell, Erased, FakeMode, ParamError, Protocol, WearLeveling};
use crate::units::parse_size;

/// How one kind of value is read from text (a profile, TOML, an override)
/// and written back as TOML text.
pub(super) trait Codec<T> {
    fn parse(key: &str, v: &str) -> Result<T, ParamError>;
    fn show(v: &T) -> String;
}

pub(super) fn bad(key: &str, value: &str, why: impl Into<String>) -> ParamError {
    ParamError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        why: why.into(),
    }
}

fn quoted(s: &str) -> String {
    format!("\"{s}\"")
}

/// A size: `4M`, `16KiB`, `0x1000`, or bytes.
pub(super) struct Size;
impl Codec<u64> for Size {
    fn parse(key: &str, v: &str) -> Result<u64, ParamError> {
        parse_size(v).map_err(|e| bad(key, v, e.to_string()))
    }
    fn show(v: &u64) -> String {
        v.to_string()
    }
}

/// The logical block size, a size that fits u32.
pub(super) struct SectorSize;
impl Codec<u32> for SectorSize {
    fn parse(key: &str, v: &str) -> Result<u32, ParamError> {
        u32::try_from(Size::parse(key, v)?).map_err(|_| bad(key, v, "too large"))
    }
    fn show(v: &u32) -> String {
        v.to_string()
    }
}

/// A count or a time in ns: a non-negative integer, `_` allowed.
pub(super) struct Int;
impl Codec<u64> for Int {
    fn parse(key: &str, v: &str) -> Result<u64, ParamError> {
        let digits = v.replace('_', "");
        digits.parse().map_err(|e: std::num::ParseIntError| {
            // 2^64 is an integer, only too large: said so, as 2^64 - 1
            // is ("more than 100 s") by the bounds.
            let why = if *e.kind() == std::num::IntErrorKind::PosOverflow {
                format!("too large: at most {}", u64::MAX)
            } else {
                "expected a non-negative integer".to_string()
            };
            bad(key, v, why)
        })
    }
    fn show(v: &u64) -> String {
        v.to_string()
    }
}

/// Data lines of the bus.
pub(super) struct Lines;
impl Codec<u32> for Lines {
    fn parse(key: &str, v: &str) -> Result<u32, ParamError> {
        u32::try_from(Int::parse(key, v)?).map_err(|_| bad(key, v, "too large"))
    }
    fn show(v: &u32) -> String {
        v.to_string()
    }
}

pub(super) struct Flag;
impl Codec<bool> for Flag {
    fn parse(key: &str, v: &str) -> Result<bool, ParamError> {
        match v {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(bad(key, v, "expected true or false")),
        }
    }
    fn show(v: &bool) -> String {
        v.to_string()
    }
}

/// A fraction from 0 to 1.
pub(super) struct Fraction;
impl Codec<f64> for Fraction {
    fn parse(key: &str, v: &str) -> Result<f64, ParamError> {
        let j: f64 = v.parse().map_err(|_| bad(key, v, "expected a fraction"))?;
        if !(0.0..=1.0).contains(&j) {
            return Err(bad(key, v, "must be between 0 and 1"));
        }
        Ok(j)
    }
    fn show(v: &f64) -> String {
        format!("{v:?}")
    }
}

/// A size, or `none`.
pub(super) struct MaybeSize;
impl Codec<Option<u64>> for MaybeSize {
    fn parse(key: &str, v: &str) -> Result<Option<u64>, ParamError> {
        if v == "none" {
            Ok(None)
        } else {
            Size::parse(key, v).map(Some)
        }
    }
    fn show(v: &Option<u64>) -> String {
        quoted(&v.map_or("none".into(), |r| r.to_string()))
    }
}

/// `START+LEN;START+LEN...`, or `none`.
pub(super) struct Ranges;
impl Codec<Vec<(u64, u64)>> for Ranges {
    fn parse(key: &str, v: &str) -> Result<Vec<(u64, u64)>, ParamError> {
        v.split(';')
            .filter(|r| !r.trim().is_empty() && r.trim() != "none")
            .map(|r| {
                let (s, l) = r.split_once('+').ok_or_else(|| bad(key, r, "expected START+LEN"))?;
                Ok((Size::parse(key, s)?, Size::parse(key, l)?))
            })
            .collect()
    }
    fn show(v: &Vec<(u64, u64)>) -> String {
        if v.is_empty() {
            return quoted("none");
        }
        quoted(&v.iter().map(|(s, l)| format!("{s}+{l}")).collect::<Vec<_>>().join(";"))
    }
}

/// Times in ns, `NS;NS;...` (`;`, as `,` parts a spec's overrides), a
/// TOML array of them, or `none` for an empty list.
pub(super) struct NsList;
impl Codec<Vec<u64>> for NsList {
    fn parse(key: &str, v: &str) -> Result<Vec<u64>, ParamError> {
        let v = v.trim();
        if v == "none" {
            return Ok(Vec::new());
        }
        let (items, sep) = match v.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            Some(inner) if inner.trim().is_empty() => return Ok(Vec::new()),
            Some(inner) => (inner, ','),
            None => (v, ';'),
        };
        items.split(sep).map(|t| Int::parse(key, t.trim())).collect()
    }
    fn show(v: &Vec<u64>) -> String {
        if v.is_empty() {
            return quoted("none");
        }
        quoted(&v.iter().map(u64::to_string).collect::<Vec<_>>().join(";"))
    }
}

/// A register as hex of N bytes (as sysfs shows it), or `none`.
pub(super) struct Reg<const N: usize>;
pub(super) type Reg8 = Reg<8>;
pub(super) type Reg16 = Reg<16>;
pub(super) type Reg64 = Reg<64>;
impl<const N: usize> Codec<Option<String>> for Reg<N> {
    fn parse(key: &str, v: &str) -> Result<Option<String>, ParamError> {
        if v.is_empty() || v == "none" {
            return Ok(None);
        }
        crate::registers::hex::parse_register(v, "register", N).map_err(|e| bad(key, v, e.to_string()))?;
        Ok(Some(v.to_string()))
    }
    fn show(v: &Option<String>) -> String {
        quoted(v.as_deref().unwrap_or("none"))
    }
}

/// A name (the host preset's, recorded once applied).
pub(super) struct Name;
impl Codec<String> for Name {
    fn parse(_: &str, v: &str) -> Result<String, ParamError> {
        Ok(v.to_string())
    }
    fn show(v: &String) -> String {
        quoted(v)
    }
}

pub(super) struct CardType;
impl Codec<String> for CardType {
    fn parse(key: &str, v: &str) -> Result<String, ParamError> {
        if !matches!(v, "SD" | "MMC" | "CF") {
            return Err(bad(key, v, "expected SD, MMC or CF"));
        }
        Ok(v.to_string())
    }
    fn show(v: &String) -> String {
        quoted(v)
    }
}

pub(super) struct FakeModeCodec;
impl Codec<FakeMode> for FakeModeCodec {
    fn parse(key: &str, v: &str) -> Result<FakeMode, ParamError> {
        match v {
            "wrap" => Ok(FakeMode::Wrap),
            "drop-zeros" => Ok(FakeMode::DropZeros),
            "drop-stale" => Ok(FakeMode::DropStale),
            "chain" => Ok(FakeMode::Chain),
            _ => Err(bad(key, v, "expected wrap, drop-zeros, drop-stale or chain")),
        }
    }
    fn show(v: &FakeMode) -> String {
        quoted(match v {
            FakeMode::Wrap => "wrap",
            FakeMode::DropZeros => "drop-zeros",
            FakeMode::DropStale => "drop-stale",
            FakeMode::Chain => "chain",
        })
    }
}

pub(super) struct ErasedCodec;
impl Codec<Erased> for ErasedCodec {
    fn parse(key: &str, v: &str) -> Result<Erased, ParamError> {
        match v {
            "zeros" | "0" | "0x00" => Ok(Erased::Zeros),
            "ones" | "0xff" | "ff" => Ok(Erased::Ones),
            _ => Err(bad(key, v, "expected zeros or ones")),
        }
    }
    fn show(v: &Erased) -> String {
        quoted(match v {
            Erased::Zeros => "zeros",
            Erased::Ones => "ones",
        })
    }
}

pub(super) struct ProtocolCodec;
impl Codec<Protocol> for ProtocolCodec {
    fn parse(key: &str, v: &str) -> Result<Protocol, ParamError> {
        match v {
            "mmc" | "sd" => Ok(Protocol::Mmc),
            "ata_pio" => Ok(Protocol::AtaPio),
            _ => Err(bad(key, v, "expected mmc or ata_pio")),
        }
    }
    fn show(v: &Protocol) -> String {
        quoted(match v {
            Protocol::Mmc => "mmc",
            Protocol::AtaPio => "ata_pio",
        })
    }
}

/// A fraction below 0.9, or `none`.
pub(super) struct MaybeFraction;
impl Codec<Option<f64>> for MaybeFraction {
    fn parse(key: &str, v: &str) -> Result<Option<f64>, ParamError> {
        if v == "none" {
            return Ok(None);
        }
        let f = Fraction::parse(key, v)?;
        // Spare of 90% leaves a tenth of the flash for data; more is no card.
        if f >= 0.9 {
            return Err(bad(key, v, "must be below 0.9, or none"));
        }
        Ok(Some(f))
    }
    fn show(v: &Option<f64>) -> String {
        v.map_or_else(|| quoted("none"), |f| format!("{f:?}"))
    }
}

pub(super) struct WearLevelingCodec;
impl Codec<WearLeveling> for WearLevelingCodec {
    fn parse(key: &str, v: &str) -> Result<WearLeveling, ParamError> {
        match v {
            "none" => Ok(WearLeveling::None),
            "dynamic" => Ok(WearLeveling::Dynamic),
            "static" => Ok(WearLeveling::Static),
            _ => Err(bad(key, v, "expected none, dynamic or static")),
        }
    }
    fn show(v: &WearLeveling) -> String {
        quoted(v.as_str())
    }
}

pub(super) struct CellCodec;
impl Codec<Cell> for CellCodec {
    fn parse(key: &str, v: &str) -> Result<Cell, ParamError> {
        Cell::ALL
            .into_iter()
            .find(|c| c.as_str() == v)
            .ok_or_else(|| bad(key, v, "expected slc, mlc, tlc or qlc"))
    }
    fn show(v: &Cell) -> String {
        quoted(v.as_str())
    }
}
