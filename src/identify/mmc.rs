//! The SD/MMC part of `info`: decoded registers plus what Linux derived from them,
//! with a judgement on where preferred_erase_size came from.

use serde::{Deserialize, Serialize};

use crate::registers::{Family, cid, csd, scr, ssr};

/// The `info.mmc` object of the JSON contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MmcInfo {
    /// Kernel card type: "SD", "MMC", "SDIO", "SDcombo".
    pub card_type: String,
    pub cid: Option<cid::Cid>,
    pub csd: Option<csd::Csd>,
    pub scr: Option<scr::Scr>,
    pub ssr: Option<ssr::Ssr>,
    pub erase_size_bytes: Option<u64>,
    pub preferred_erase_size_bytes: Option<u64>,
    pub preferred_erase_size_source: EraseSizeSource,
    /// The manufacturing date as the kernel printed it (it knows EXT_CSD_REV).
    pub kernel_date: Option<String>,
    pub notes: Vec<String>,
    /// The registers' bytes as sysfs gave them, in hex: what
    /// `flashlab decode` reads (none to copy from `info`). Keys
    /// `cid`, `csd`, `scr`, `ssr`, each only when read.
    #[serde(default)]
    pub raw_hex: std::collections::BTreeMap<String, String>,
}

/// Where the kernel's `preferred_erase_size` came from: advice treats a
/// guess from the capacity as no evidence of the card's AU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EraseSizeSource {
    /// The card's SSR AU size.
    SsrAu,
    /// Linux's fallback from the capacity alone.
    KernelCapacityGuess,
    #[serde(other)]
    Unknown,
}

impl MmcInfo {
    /// Where the kernel's preferred erase size came from, in words
    /// (`preferred_erase_size_source` is the JSON's stable name for it).
    pub fn erase_size_source_words(&self) -> &'static str {
        match self.preferred_erase_size_source {
            EraseSizeSource::SsrAu => "from the card's SSR",
            EraseSizeSource::KernelCapacityGuess => "the kernel's guess from the capacity",
            EraseSizeSource::Unknown => "source unknown",
        }
    }
}

/// Raw register bytes and kernel attributes, from sysfs or a simulated card.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MmcRaw {
    pub card_type: String,
    pub cid: Option<[u8; 16]>,
    pub csd: Option<[u8; 16]>,
    pub scr: Option<[u8; 8]>,
    pub ssr: Option<[u8; 64]>,
    pub erase_size_bytes: Option<u64>,
    pub preferred_erase_size_bytes: Option<u64>,
    pub date: Option<String>,
}

/// Linux's preferred-erase guess when the card states no AU (mmc_init_erase() in
/// drivers/mmc/core/core.c): by capacity, <128 MiB 512 KiB, <512 MiB 1 MiB,
/// <1 GiB 2 MiB, else 4 MiB, rounded up to a multiple of the erase size.
pub fn kernel_preferred_erase_guess(capacity_bytes: u64, erase_size_bytes: u64) -> u64 {
    let mib = capacity_bytes >> 20;
    let guess: u64 = match mib {
        0..128 => 512 << 10,
        128..512 => 1 << 20,
        512..1024 => 2 << 20,
        _ => 4 << 20,
    };
    if erase_size_bytes == 0 || guess <= erase_size_bytes {
        return guess.max(erase_size_bytes);
    }
    guess.next_multiple_of(erase_size_bytes)
}

/// What Linux exports as preferred_erase_size: the SSR's AU when the card states
/// one, else [`kernel_preferred_erase_guess`] (mmc_init_erase()).
pub fn kernel_preferred_erase(ssr: Option<&[u8; 64]>, capacity_bytes: u64, erase_size_bytes: u64) -> u64 {
    ssr.and_then(|s| ssr::decode(s).au_size_bytes)
        .unwrap_or_else(|| kernel_preferred_erase_guess(capacity_bytes, erase_size_bytes))
}

impl MmcInfo {
    pub fn from_raw(raw: MmcRaw, capacity_bytes: u64) -> Self {
        use crate::registers::hex::encode;
        let raw_hex: std::collections::BTreeMap<String, String> = [
            ("cid", raw.cid.map(|b| encode(&b))),
            ("csd", raw.csd.map(|b| encode(&b))),
            ("scr", raw.scr.map(|b| encode(&b))),
            ("ssr", raw.ssr.map(|b| encode(&b))),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect();
        let family = if raw.card_type.eq_ignore_ascii_case("MMC") {
            Family::Mmc
        } else {
            Family::Sd
        };
        let cid = raw.cid.map(|b| match family {
            Family::Sd => cid::decode_sd(&b),
            Family::Mmc => cid::decode_mmc(&b),
        });
        let csd = raw.csd.map(|b| match family {
            Family::Sd => csd::decode_sd(&b),
            Family::Mmc => csd::decode_mmc(&b),
        });
        let scr = raw.scr.filter(|_| family == Family::Sd).map(|b| scr::decode(&b));
        let ssr = raw.ssr.filter(|_| family == Family::Sd).map(|b| ssr::decode(&b));
        let mut notes = Vec::new();
        let au = ssr.as_ref().and_then(|s| s.au_size_bytes);
        let source = match (raw.preferred_erase_size_bytes, au) {
            (Some(pref), Some(au)) => {
                if pref != au {
                    notes.push(format!("preferred_erase_size {pref} differs from the SSR AU size {au}"));
                }
                EraseSizeSource::SsrAu
            }
            (Some(pref), None)
                if pref == kernel_preferred_erase_guess(capacity_bytes, raw.erase_size_bytes.unwrap_or(0)) =>
            {
                notes.push(format!(
                    "preferred_erase_size {pref} is the kernel's guess from the capacity, not the card's allocation unit; `flashlab align` measures the real one"
                ));
                EraseSizeSource::KernelCapacityGuess
            }
            _ => EraseSizeSource::Unknown,
        };
        if let (Some(csd), true) = (&csd, capacity_bytes > 0)
            && let Some(c) = csd.capacity_bytes
            && c != capacity_bytes
        {
            notes.push(format!(
                "CSD capacity {c} differs from the block device size {capacity_bytes}"
            ));
        }
        MmcInfo {
            card_type: raw.card_type,
            cid,
            csd,
            scr,
            ssr,
            erase_size_bytes: raw.erase_size_bytes,
            preferred_erase_size_bytes: raw.preferred_erase_size_bytes,
            preferred_erase_size_source: source,
            kernel_date: raw.date,
            notes,
            raw_hex,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_guess_matches_linux_table() {
        assert_eq!(kernel_preferred_erase_guess(64 << 20, 512), 512 << 10);
        assert_eq!(kernel_preferred_erase_guess(256 << 20, 512), 1 << 20);
        assert_eq!(kernel_preferred_erase_guess(768 << 20, 512), 2 << 20);
        assert_eq!(kernel_preferred_erase_guess(3_904_897_024, 512), 4 << 20);
        // An eMMC erase group of 3 MiB rounds the 4 MiB guess up to 6 MiB.
        assert_eq!(kernel_preferred_erase_guess(8 << 30, 3 << 20), 6 << 20);
        assert_eq!(kernel_preferred_erase_guess(8 << 30, 8 << 20), 8 << 20);
        let mut ssr = [0u8; 64];
        ssr[10] = 0xb0; // AU_SIZE 0xb: 12 MiB
        assert_eq!(kernel_preferred_erase(Some(&ssr), 64 << 30, 512), 12 << 20);
        assert_eq!(kernel_preferred_erase(None, 64 << 30, 512), 4 << 20);
    }
}
