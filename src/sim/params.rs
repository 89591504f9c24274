//! Simulator parameters. Every way of setting one — a built-in profile, a TOML
//! file, a `,key=value` override — goes through [`Params::set`], so they all accept
//! the same keys, units and errors (an unknown key or impossible value names the
//! key).

use crate::units::{Iec, parse_size};

/// Why a simulated card was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    #[error("unknown key '{0}' (see `flashlab sim show demo --toml` for every key)")]
    UnknownKey(String),
    #[error("{key}: '{value}' is not valid ({why})")]
    BadValue { key: String, value: String, why: String },
    #[error("{key}: {why}")]
    Impossible { key: &'static str, why: String },
    #[error("unknown profile '{0}' (see `flashlab sim list`)")]
    UnknownProfile(String),
    #[error("unknown host preset '{0}' (see `flashlab sim list`)")]
    UnknownHost(String),
    #[error("{path}: {why}")]
    File { path: String, why: String },
}

/// Largest simulated capacity: 1 PiB, beyond any card or SSD on sale; data is
/// sparse, but every size and count derived from it stays far inside u64.
const MAX_CAPACITY: u64 = 1 << 50;
/// Largest effective page (page x planes): 64 KiB pages on 4 planes are the
/// largest in use; 4 MiB leaves room.
const MAX_PAGE: u64 = 4 << 20;
/// Largest AU: SD stops at 64 MiB (SD spec 4.10.2); 1 GiB matches the erase
/// size the tests accept (`measure::MAX_ERASE`).
const MAX_AU: u64 = 1 << 30;
/// Deepest host queue: NVMe's 64K entries are far beyond any SD host; 1024.
const MAX_QUEUE: u64 = 1024;
/// Longest multi-block command: 2^20 blocks (512 MiB of 512-byte blocks).
const MAX_BLOCKS_PER_CMD: u64 = 1 << 20;
/// Longest time any one flash or host step may take: 100 s.
const MAX_NS: u64 = 100_000_000_000;
/// Fastest bus clock: 10 GHz, well above HS400's 200 MHz.
const MAX_CLOCK_HZ: u64 = 10_000_000_000;
/// Most failing ranges one card may list.
const MAX_BAD_RANGES: usize = 1024;
/// Largest `sim:FILE.toml`: a profile is a page of keys.
pub const MAX_PROFILE_FILE: u64 = 1 << 20;

/// Bus protocol of the host model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// SD/MMC: command + response frames, per-block CRC, busy after writes.
    Mmc,
    /// CompactFlash/ATA in PIO mode: command-to-data delay, PIO per sector.
    AtaPio,
}

/// What never-written blocks read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Erased {
    Zeros,
    Ones,
}

/// Every parameter of a simulated card plus its host. Times in nanoseconds, sizes
/// in bytes, rates in bytes per second.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    // --- geometry ---
    pub capacity: u64,
    pub sector_size: u32,
    /// Effective NAND page (page x planes written together).
    pub page_size: u64,
    pub au_size: u64,
    pub fat_area_aus: u64,
    // --- FTL ---
    pub open_aus_linear: u64,
    pub open_aus_random: u64,
    // --- flash timing ---
    pub page_read_ns: u64,
    pub page_program_ns: u64,
    pub au_erase_ns: u64,
    /// Garbage collection cost per page moved (on-chip copy-back); 0 means a
    /// page read plus a page program.
    pub copy_page_ns: u64,
    /// Extra time when a read crosses an AU boundary (a second block lookup).
    pub au_cross_read_ns: u64,
    /// Extra time per random-order (out of sequence) write inside an open AU.
    pub random_write_ns: u64,
    /// Card-side read access time per read command (SD spec 5.3.2 TAAC/NSAC:
    /// the controller locating the data before the first block).
    pub card_access_ns: u64,
    /// Extra read access when a read does not continue from the page the card
    /// last read (a translation-table lookup instead of a read-buffer hit).
    pub random_read_ns: u64,
    /// Card-side time to close each write command (mapping update, commit).
    pub write_commit_ns: u64,
    /// Extra cost when a write command ends or starts inside a page: the card
    /// merges the partial page in its buffer block (read-modify-write).
    pub partial_page_write_ns: u64,
    /// Extra latency of the first command after the card was idle (wake-up).
    pub wake_ns: u64,
    /// Page-mapped FTL (eMMC, SSD): every AU takes writes in any order without
    /// garbage collection, only `random_write_ns` extra for a non-sequential one.
    pub page_mapped: bool,
    // --- data ---
    pub keep_data: bool,
    pub erased: Erased,
    // --- faults ---
    pub real_capacity: Option<u64>,
    pub bad_ranges: Vec<(u64, u64)>,
    pub jitter: f64,
    pub seed: u64,
    // --- registers (hex, as sysfs shows them) ---
    pub card_type: String,
    pub cid: Option<String>,
    pub csd: Option<String>,
    pub scr: Option<String>,
    pub ssr: Option<String>,
    // --- host ---
    pub host: String,
    pub protocol: Protocol,
    pub bus_width: u32,
    pub clock_hz: u64,
    pub ddr: bool,
    /// 1 = single-block commands only.
    pub max_blocks_per_cmd: u64,
    /// Pre-set block count (CMD23) instead of a stop command after multi-block.
    pub set_block_count: bool,
    /// Host software time per command (driver path, request setup).
    pub host_overhead_ns: u64,
    /// Host CPU time per block while data streams (copying, byte-swapping).
    pub host_block_ns: u64,
    /// Host time after each write command (busy wait, status poll).
    pub write_status_ns: u64,
    /// Host time per interrupt; one per block or one per command.
    pub irq_ns: u64,
    pub irq_per_block: bool,
    pub queue_depth: u64,
    pub in_flight: u64,
    /// ATA PIO: command to first data (DRQ) delay.
    pub ata_cmd_to_data_ns: u64,
    /// ATA PIO: time to move one sector by PIO (reads).
    pub ata_pio_sector_ns: u64,
    /// ATA PIO: time to move one sector by PIO (writes).
    pub ata_pio_write_sector_ns: u64,
    /// ATA PIO: delay from one sector to the next inside a multi-sector command.
    pub ata_next_sector_ns: u64,
}

impl Default for Params {
    /// A plain 8 GiB SD card behind a 4-bit 50 MHz host: a neutral base the profiles
    /// override.
    fn default() -> Self {
        Params {
            capacity: 8 << 30,
            sector_size: 512,
            page_size: 16 << 10,
            au_size: 4 << 20,
            fat_area_aus: 0,
            open_aus_linear: 4,
            open_aus_random: 2,
            page_read_ns: 60_000,
            page_program_ns: 1_200_000,
            au_erase_ns: 3_000_000,
            copy_page_ns: 0,
            au_cross_read_ns: 50_000,
            random_write_ns: 500_000,
            card_access_ns: 100_000,
            random_read_ns: 0,
            write_commit_ns: 0,
            partial_page_write_ns: 0,
            wake_ns: 0,
            page_mapped: false,
            keep_data: true,
            erased: Erased::Zeros,
            real_capacity: None,
            bad_ranges: Vec::new(),
            jitter: 0.0,
            seed: 1,
            card_type: "SD".into(),
            cid: None,
            csd: None,
            scr: None,
            ssr: None,
            host: "generic".into(),
            protocol: Protocol::Mmc,
            bus_width: 4,
            clock_hz: 50_000_000,
            ddr: false,
            max_blocks_per_cmd: 1024,
            set_block_count: true,
            host_overhead_ns: 20_000,
            host_block_ns: 0,
            write_status_ns: 0,
            irq_ns: 5_000,
            irq_per_block: false,
            queue_depth: 1,
            in_flight: 1,
            ata_cmd_to_data_ns: 0,
            ata_pio_sector_ns: 0,
            ata_pio_write_sector_ns: 0,
            ata_next_sector_ns: 0,
        }
    }
}

/// One documented key: name, unit, meaning.
pub struct KeyDoc {
    pub key: &'static str,
    pub unit: &'static str,
    pub doc: &'static str,
}

/// Every key [`Params::set`] accepts, in display order.
pub const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "capacity",
        unit: "bytes",
        doc: "announced capacity",
    },
    KeyDoc {
        key: "sector_size",
        unit: "bytes",
        doc: "logical block size (512 or 4096)",
    },
    KeyDoc {
        key: "page_size",
        unit: "bytes",
        doc: "effective NAND page (page x planes)",
    },
    KeyDoc {
        key: "au_size",
        unit: "bytes",
        doc: "allocation unit / erase block; any multiple of the page",
    },
    KeyDoc {
        key: "fat_area_aus",
        unit: "AUs",
        doc: "leading AUs that take small random writes cheaply",
    },
    KeyDoc {
        key: "open_aus_linear",
        unit: "AUs",
        doc: "AUs open at once for in-order writes",
    },
    KeyDoc {
        key: "open_aus_random",
        unit: "AUs",
        doc: "AUs open at once for random-order writes",
    },
    KeyDoc {
        key: "page_read_ns",
        unit: "ns",
        doc: "NAND page read",
    },
    KeyDoc {
        key: "page_program_ns",
        unit: "ns",
        doc: "NAND page program",
    },
    KeyDoc {
        key: "au_erase_ns",
        unit: "ns",
        doc: "erase of one AU",
    },
    KeyDoc {
        key: "copy_page_ns",
        unit: "ns",
        doc: "GC cost per page moved (0 = page read + program)",
    },
    KeyDoc {
        key: "au_cross_read_ns",
        unit: "ns",
        doc: "extra read cost crossing an AU boundary",
    },
    KeyDoc {
        key: "random_write_ns",
        unit: "ns",
        doc: "extra cost of an out-of-order write in an open AU",
    },
    KeyDoc {
        key: "card_access_ns",
        unit: "ns",
        doc: "card read access time per read command (TAAC)",
    },
    KeyDoc {
        key: "random_read_ns",
        unit: "ns",
        doc: "extra read access when the read misses the card's read buffer",
    },
    KeyDoc {
        key: "write_commit_ns",
        unit: "ns",
        doc: "card time closing each write command",
    },
    KeyDoc {
        key: "partial_page_write_ns",
        unit: "ns",
        doc: "extra cost of a write command ending inside a page",
    },
    KeyDoc {
        key: "wake_ns",
        unit: "ns",
        doc: "extra latency of the first command after idle",
    },
    KeyDoc {
        key: "page_mapped",
        unit: "bool",
        doc: "page-mapped FTL: no AU garbage collection",
    },
    KeyDoc {
        key: "keep_data",
        unit: "bool",
        doc: "keep written data (false: timing only)",
    },
    KeyDoc {
        key: "erased",
        unit: "zeros|ones",
        doc: "what never-written blocks read as",
    },
    KeyDoc {
        key: "real_capacity",
        unit: "bytes",
        doc: "fake card: addresses wrap past this size",
    },
    KeyDoc {
        key: "bad_ranges",
        unit: "START+LEN;...",
        doc: "byte ranges that return I/O errors",
    },
    KeyDoc {
        key: "jitter",
        unit: "fraction",
        doc: "seeded timing noise, 0 to 1",
    },
    KeyDoc {
        key: "seed",
        unit: "integer",
        doc: "seed for jitter",
    },
    KeyDoc {
        key: "card_type",
        unit: "SD|MMC|CF",
        doc: "register layout",
    },
    KeyDoc {
        key: "cid",
        unit: "hex",
        doc: "CID register",
    },
    KeyDoc {
        key: "csd",
        unit: "hex",
        doc: "CSD register",
    },
    KeyDoc {
        key: "scr",
        unit: "hex",
        doc: "SCR register",
    },
    KeyDoc {
        key: "ssr",
        unit: "hex",
        doc: "SSR register",
    },
    KeyDoc {
        key: "host",
        unit: "preset",
        doc: "host preset (sets every key below)",
    },
    KeyDoc {
        key: "protocol",
        unit: "mmc|ata_pio",
        doc: "bus protocol",
    },
    KeyDoc {
        key: "bus_width",
        unit: "bits",
        doc: "1, 4 or 8 data lines",
    },
    KeyDoc {
        key: "clock_hz",
        unit: "Hz",
        doc: "bus clock",
    },
    KeyDoc {
        key: "ddr",
        unit: "bool",
        doc: "data on both clock edges",
    },
    KeyDoc {
        key: "max_blocks_per_cmd",
        unit: "blocks",
        doc: "1 = single-block commands only",
    },
    KeyDoc {
        key: "set_block_count",
        unit: "bool",
        doc: "CMD23 pre-set count instead of a stop command",
    },
    KeyDoc {
        key: "host_overhead_ns",
        unit: "ns",
        doc: "host software time per command",
    },
    KeyDoc {
        key: "host_block_ns",
        unit: "ns",
        doc: "host CPU time per block while data streams",
    },
    KeyDoc {
        key: "write_status_ns",
        unit: "ns",
        doc: "host time after each write command (busy wait, status)",
    },
    KeyDoc {
        key: "irq_ns",
        unit: "ns",
        doc: "host time per interrupt",
    },
    KeyDoc {
        key: "irq_per_block",
        unit: "bool",
        doc: "one interrupt per block (else per command)",
    },
    KeyDoc {
        key: "queue_depth",
        unit: "requests",
        doc: "host software queue depth",
    },
    KeyDoc {
        key: "in_flight",
        unit: "requests",
        doc: "requests the host keeps in flight at once",
    },
    KeyDoc {
        key: "ata_cmd_to_data_ns",
        unit: "ns",
        doc: "ATA PIO: command to data ready",
    },
    KeyDoc {
        key: "ata_pio_sector_ns",
        unit: "ns",
        doc: "ATA PIO: one sector by PIO, reads",
    },
    KeyDoc {
        key: "ata_pio_write_sector_ns",
        unit: "ns",
        doc: "ATA PIO: one sector by PIO, writes",
    },
    KeyDoc {
        key: "ata_next_sector_ns",
        unit: "ns",
        doc: "ATA PIO: next sector ready inside a multi-sector command",
    },
];

fn bad(key: &str, value: &str, why: impl Into<String>) -> ParamError {
    ParamError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        why: why.into(),
    }
}

fn size(key: &str, v: &str) -> Result<u64, ParamError> {
    parse_size(v).map_err(|e| bad(key, v, e.to_string()))
}

fn int(key: &str, v: &str) -> Result<u64, ParamError> {
    v.replace('_', "")
        .parse()
        .map_err(|_| bad(key, v, "expected a non-negative integer"))
}

fn boolean(key: &str, v: &str) -> Result<bool, ParamError> {
    match v {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(bad(key, v, "expected true or false")),
    }
}

fn hex(key: &str, v: &str, len: usize) -> Result<Option<String>, ParamError> {
    if v.is_empty() || v == "none" {
        return Ok(None);
    }
    crate::registers::hex::parse_register(v, "register", len).map_err(|e| bad(key, v, e.to_string()))?;
    Ok(Some(v.to_string()))
}

impl Params {
    /// Set one key from its text form.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), ParamError> {
        let v = v.trim().trim_matches('"');
        match key {
            "capacity" => self.capacity = size(key, v)?,
            "sector_size" => self.sector_size = u32::try_from(size(key, v)?).map_err(|_| bad(key, v, "too large"))?,
            "page_size" => self.page_size = size(key, v)?,
            "au_size" => self.au_size = size(key, v)?,
            "fat_area_aus" => self.fat_area_aus = int(key, v)?,
            "open_aus_linear" => self.open_aus_linear = int(key, v)?,
            "open_aus_random" => self.open_aus_random = int(key, v)?,
            "page_read_ns" => self.page_read_ns = int(key, v)?,
            "page_program_ns" => self.page_program_ns = int(key, v)?,
            "au_erase_ns" => self.au_erase_ns = int(key, v)?,
            "copy_page_ns" => self.copy_page_ns = int(key, v)?,
            "au_cross_read_ns" => self.au_cross_read_ns = int(key, v)?,
            "random_write_ns" => self.random_write_ns = int(key, v)?,
            "card_access_ns" => self.card_access_ns = int(key, v)?,
            "random_read_ns" => self.random_read_ns = int(key, v)?,
            "write_commit_ns" => self.write_commit_ns = int(key, v)?,
            "partial_page_write_ns" => self.partial_page_write_ns = int(key, v)?,
            "wake_ns" => self.wake_ns = int(key, v)?,
            "page_mapped" => self.page_mapped = boolean(key, v)?,
            "keep_data" => self.keep_data = boolean(key, v)?,
            "erased" => {
                self.erased = match v {
                    "zeros" | "0" | "0x00" => Erased::Zeros,
                    "ones" | "0xff" | "ff" => Erased::Ones,
                    _ => return Err(bad(key, v, "expected zeros or ones")),
                }
            }
            "real_capacity" => self.real_capacity = if v == "none" { None } else { Some(size(key, v)?) },
            "bad_ranges" => {
                self.bad_ranges = v
                    .split(';')
                    .filter(|r| !r.trim().is_empty() && r.trim() != "none")
                    .map(|r| {
                        let (s, l) = r.split_once('+').ok_or_else(|| bad(key, r, "expected START+LEN"))?;
                        Ok((size(key, s)?, size(key, l)?))
                    })
                    .collect::<Result<_, ParamError>>()?
            }
            "jitter" => {
                let j: f64 = v.parse().map_err(|_| bad(key, v, "expected a fraction"))?;
                if !(0.0..=1.0).contains(&j) {
                    return Err(bad(key, v, "must be between 0 and 1"));
                }
                self.jitter = j;
            }
            "seed" => self.seed = int(key, v)?,
            "card_type" => {
                if !matches!(v, "SD" | "MMC" | "CF") {
                    return Err(bad(key, v, "expected SD, MMC or CF"));
                }
                self.card_type = v.to_string();
            }
            "cid" => self.cid = hex(key, v, 16)?,
            "csd" => self.csd = hex(key, v, 16)?,
            "scr" => self.scr = hex(key, v, 8)?,
            "ssr" => self.ssr = hex(key, v, 64)?,
            "host" => super::profiles::apply_host(self, v)?,
            "protocol" => {
                self.protocol = match v {
                    "mmc" | "sd" => Protocol::Mmc,
                    "ata_pio" => Protocol::AtaPio,
                    _ => return Err(bad(key, v, "expected mmc or ata_pio")),
                }
            }
            "bus_width" => self.bus_width = int(key, v)? as u32,
            "clock_hz" => self.clock_hz = int(key, v)?,
            "ddr" => self.ddr = boolean(key, v)?,
            "max_blocks_per_cmd" => self.max_blocks_per_cmd = int(key, v)?,
            "set_block_count" => self.set_block_count = boolean(key, v)?,
            "host_overhead_ns" => self.host_overhead_ns = int(key, v)?,
            "host_block_ns" => self.host_block_ns = int(key, v)?,
            "write_status_ns" => self.write_status_ns = int(key, v)?,
            "irq_ns" => self.irq_ns = int(key, v)?,
            "irq_per_block" => self.irq_per_block = boolean(key, v)?,
            "queue_depth" => self.queue_depth = int(key, v)?,
            "in_flight" => self.in_flight = int(key, v)?,
            "ata_cmd_to_data_ns" => self.ata_cmd_to_data_ns = int(key, v)?,
            "ata_pio_sector_ns" => self.ata_pio_sector_ns = int(key, v)?,
            "ata_pio_write_sector_ns" => self.ata_pio_write_sector_ns = int(key, v)?,
            "ata_next_sector_ns" => self.ata_next_sector_ns = int(key, v)?,
            _ => return Err(ParamError::UnknownKey(key.to_string())),
        }
        Ok(())
    }

    /// Reject impossible combinations, naming the key at fault.
    pub fn validate(&self) -> Result<(), ParamError> {
        let imp = |key, why: String| Err(ParamError::Impossible { key, why });
        // Bounds first, so nothing below (or in the model) can overflow or
        // allocate without limit: sizes a real card could have, times a real
        // card could take.
        let bounds: [(&'static str, u64, u64); 5] = [
            ("capacity", self.capacity, MAX_CAPACITY),
            ("page_size", self.page_size, MAX_PAGE),
            ("au_size", self.au_size, MAX_AU),
            ("queue_depth", self.queue_depth, MAX_QUEUE),
            ("max_blocks_per_cmd", self.max_blocks_per_cmd, MAX_BLOCKS_PER_CMD),
        ];
        for (key, v, max) in bounds {
            if v > max {
                return imp(key, format!("{v} is more than the largest accepted, {max}"));
            }
        }
        for k in KEYS.iter().filter(|k| k.unit == "ns") {
            let v: u64 = self.get(k.key).parse().unwrap_or(0);
            if v > MAX_NS {
                return imp(k.key, format!("{v} ns is more than {} s", MAX_NS / 1_000_000_000));
            }
        }
        if self.clock_hz > MAX_CLOCK_HZ {
            return imp("clock_hz", format!("{} is more than {MAX_CLOCK_HZ}", self.clock_hz));
        }
        if self.bad_ranges.len() > MAX_BAD_RANGES {
            return imp("bad_ranges", format!("more than {MAX_BAD_RANGES} ranges"));
        }
        if !matches!(self.sector_size, 512 | 4096) {
            return imp("sector_size", format!("{} is neither 512 nor 4096", self.sector_size));
        }
        let s = u64::from(self.sector_size);
        if self.capacity == 0 || !self.capacity.is_multiple_of(s) {
            return imp(
                "capacity",
                format!("{} is zero or not a multiple of the {s}-byte sector", self.capacity),
            );
        }
        if self.page_size == 0 || !self.page_size.is_multiple_of(s) {
            return imp(
                "page_size",
                format!("{} is zero or not a multiple of the sector", self.page_size),
            );
        }
        if self.au_size == 0 || !self.au_size.is_multiple_of(self.page_size) {
            return imp(
                "au_size",
                format!(
                    "{} is not a multiple of the page size {}",
                    Iec(self.au_size),
                    Iec(self.page_size)
                ),
            );
        }
        if self.au_size > self.capacity {
            return imp("au_size", format!("{} is larger than the capacity", Iec(self.au_size)));
        }
        let aus = self.capacity / self.au_size;
        if self.open_aus_linear == 0 || self.open_aus_linear > aus {
            return imp(
                "open_aus_linear",
                format!(
                    "{} must be between 1 and the {aus} AUs of the card",
                    self.open_aus_linear
                ),
            );
        }
        if self.open_aus_random > aus {
            return imp(
                "open_aus_random",
                format!("{} is more than the {aus} AUs of the card", self.open_aus_random),
            );
        }
        if self.fat_area_aus > aus {
            return imp(
                "fat_area_aus",
                format!("{} is more than the {aus} AUs of the card", self.fat_area_aus),
            );
        }
        if let Some(real) = self.real_capacity
            && (real == 0 || real > self.capacity || !real.is_multiple_of(s))
        {
            return imp(
                "real_capacity",
                format!("{real} must be a non-zero multiple of the sector, at most the capacity"),
            );
        }
        for &(start, len) in &self.bad_ranges {
            if len == 0 || start.checked_add(len).is_none_or(|e| e > self.capacity) {
                return imp(
                    "bad_ranges",
                    format!("{start}+{len} is empty or passes the end of the card"),
                );
            }
        }
        if !matches!(self.bus_width, 1 | 4 | 8) {
            return imp("bus_width", format!("{} is not 1, 4 or 8", self.bus_width));
        }
        if self.clock_hz == 0 {
            return imp("clock_hz", "must not be zero".into());
        }
        if self.max_blocks_per_cmd == 0 {
            return imp("max_blocks_per_cmd", "must be at least 1".into());
        }
        if self.queue_depth == 0 || self.in_flight == 0 {
            return imp("in_flight", "queue_depth and in_flight must be at least 1".into());
        }
        if self.in_flight > self.queue_depth {
            return imp(
                "in_flight",
                format!("{} in flight exceeds queue_depth {}", self.in_flight, self.queue_depth),
            );
        }
        Ok(())
    }

    /// Every key with its current value, as TOML (what `sim show --toml` prints and
    /// `sim:FILE.toml` reads back).
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        for k in KEYS {
            let value = self.get(k.key);
            out.push_str(&format!("{} = {}  # {} ({})\n", k.key, value, k.doc, k.unit));
        }
        out
    }

    /// One key's value as TOML text.
    pub fn get(&self, key: &str) -> String {
        let q = |s: &str| format!("\"{s}\"");
        match key {
            "capacity" => self.capacity.to_string(),
            "sector_size" => self.sector_size.to_string(),
            "page_size" => self.page_size.to_string(),
            "au_size" => self.au_size.to_string(),
            "fat_area_aus" => self.fat_area_aus.to_string(),
            "open_aus_linear" => self.open_aus_linear.to_string(),
            "open_aus_random" => self.open_aus_random.to_string(),
            "page_read_ns" => self.page_read_ns.to_string(),
            "page_program_ns" => self.page_program_ns.to_string(),
            "au_erase_ns" => self.au_erase_ns.to_string(),
            "copy_page_ns" => self.copy_page_ns.to_string(),
            "au_cross_read_ns" => self.au_cross_read_ns.to_string(),
            "random_write_ns" => self.random_write_ns.to_string(),
            "card_access_ns" => self.card_access_ns.to_string(),
            "random_read_ns" => self.random_read_ns.to_string(),
            "write_commit_ns" => self.write_commit_ns.to_string(),
            "partial_page_write_ns" => self.partial_page_write_ns.to_string(),
            "wake_ns" => self.wake_ns.to_string(),
            "page_mapped" => self.page_mapped.to_string(),
            "keep_data" => self.keep_data.to_string(),
            "erased" => q(if self.erased == Erased::Zeros { "zeros" } else { "ones" }),
            "real_capacity" => q(&self.real_capacity.map_or("none".into(), |r| r.to_string())),
            "bad_ranges" => q(&if self.bad_ranges.is_empty() {
                "none".to_string()
            } else {
                self.bad_ranges
                    .iter()
                    .map(|(s, l)| format!("{s}+{l}"))
                    .collect::<Vec<_>>()
                    .join(";")
            }),
            "jitter" => format!("{:?}", self.jitter),
            "seed" => self.seed.to_string(),
            "card_type" => q(&self.card_type),
            "cid" => q(self.cid.as_deref().unwrap_or("none")),
            "csd" => q(self.csd.as_deref().unwrap_or("none")),
            "scr" => q(self.scr.as_deref().unwrap_or("none")),
            "ssr" => q(self.ssr.as_deref().unwrap_or("none")),
            "host" => q(&self.host),
            "protocol" => q(if self.protocol == Protocol::Mmc {
                "mmc"
            } else {
                "ata_pio"
            }),
            "bus_width" => self.bus_width.to_string(),
            "clock_hz" => self.clock_hz.to_string(),
            "ddr" => self.ddr.to_string(),
            "max_blocks_per_cmd" => self.max_blocks_per_cmd.to_string(),
            "set_block_count" => self.set_block_count.to_string(),
            "host_overhead_ns" => self.host_overhead_ns.to_string(),
            "host_block_ns" => self.host_block_ns.to_string(),
            "write_status_ns" => self.write_status_ns.to_string(),
            "irq_ns" => self.irq_ns.to_string(),
            "irq_per_block" => self.irq_per_block.to_string(),
            "queue_depth" => self.queue_depth.to_string(),
            "in_flight" => self.in_flight.to_string(),
            "ata_cmd_to_data_ns" => self.ata_cmd_to_data_ns.to_string(),
            "ata_pio_sector_ns" => self.ata_pio_sector_ns.to_string(),
            "ata_pio_write_sector_ns" => self.ata_pio_write_sector_ns.to_string(),
            "ata_next_sector_ns" => self.ata_next_sector_ns.to_string(),
            _ => String::new(),
        }
    }

    /// Apply a TOML document (a flat table of keys). `host` is applied first so the
    /// file's own host keys override the preset, as on the command line.
    pub fn apply_toml(&mut self, text: &str, path: &str) -> Result<(), ParamError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| ParamError::File {
            path: path.to_string(),
            why: e.message().to_string(),
        })?;
        let text_of = |v: &toml::Value| match v {
            toml::Value::String(s) => s.clone(),
            other @ (toml::Value::Integer(_)
            | toml::Value::Float(_)
            | toml::Value::Boolean(_)
            | toml::Value::Datetime(_)
            | toml::Value::Array(_)
            | toml::Value::Table(_)) => other.to_string(),
        };
        if let Some(h) = table.get("host") {
            self.set("host", &text_of(h))?;
        }
        for (k, v) in &table {
            if k != "host" {
                self.set(k, &text_of(v))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_round_trips_through_toml() {
        let p = Params::default();
        let mut q = Params {
            capacity: 1,
            ..Params::default()
        };
        q.apply_toml(&p.to_toml(), "x").unwrap();
        assert_eq!(p, q);
        for k in KEYS {
            assert!(!p.get(k.key).is_empty(), "{}", k.key);
        }
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let mut p = Params::default();
        assert_eq!(p.set("au_sise", "4M"), Err(ParamError::UnknownKey("au_sise".into())));
        assert!(matches!(p.set("au_size", "four"), Err(ParamError::BadValue { key, .. }) if key == "au_size"));
        assert!(matches!(p.set("jitter", "2"), Err(ParamError::BadValue { key, .. }) if key == "jitter"));
        assert!(matches!(p.set("cid", "abc"), Err(ParamError::BadValue { key, .. }) if key == "cid"));
    }

    #[test]
    fn impossible_combinations() {
        let check = |k: &str, v: &str, key: &str| {
            let mut p = Params::default();
            p.set(k, v).unwrap();
            match p.validate() {
                Err(ParamError::Impossible { key: got, .. }) => assert_eq!(got, key, "{k}={v}"),
                other => panic!("{k}={v}: {other:?}"),
            }
        };
        check("au_size", "20k", "au_size"); // not a multiple of the 16 KiB page
        check("capacity", "1000", "capacity");
        check("page_size", "0", "page_size");
        check("open_aus_linear", "0", "open_aus_linear");
        check("open_aus_linear", "3000", "open_aus_linear");
        check("real_capacity", "9G", "real_capacity");
        check("bad_ranges", "8G+4k", "bad_ranges");
        check("bus_width", "2", "bus_width");
        check("in_flight", "4", "in_flight");
        let mut p = Params::default();
        p.set("au_size", "12M").unwrap(); // 3 x 2^22: allowed
        p.set("capacity", "12G").unwrap();
        assert!(p.validate().is_ok());
    }
}
