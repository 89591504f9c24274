//! Simulator parameters, each defined once in the [`params!`] table below:
//! its field, type, codec (how its text is read and written back), default,
//! unit and meaning. Every way of setting one (a built-in profile, a TOML
//! file, a `,key=value` override, a host preset) goes through [`Params::set`],
//! so they all accept the same keys, units and errors (an unknown key or an
//! impossible value names the key).

mod codecs;
mod validate;

use crate::units::Iec;
use codecs::*;

/// Why a simulated card was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    #[error(
        "unknown key '{0}'{dym} (see `flashlab sim show demo --toml` for every key)",
        dym = crate::console::did_you_mean(.0, KEYS.iter().map(|k| k.key))
    )]
    UnknownKey(String),
    #[error("{key}: '{value}' is not valid ({why})")]
    BadValue { key: String, value: String, why: String },
    #[error("{key}: {why}")]
    Impossible { key: &'static str, why: String },
    /// The name, and " (did you mean ...?)" where one is close.
    #[error("unknown profile '{0}'{1} (see `flashlab sim list`)")]
    UnknownProfile(String, String),
    #[error("unknown host preset '{0}' (see `flashlab sim list`)")]
    UnknownHost(String),
    #[error("{path}: {why}")]
    File { path: String, why: String },
}

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

/// How a fake card treats addresses past its real capacity. The kinds
/// fake-capacity testers report (f3's documentation names wrap-around and
/// "writes past N are lost"; a small cache in front of either defeats a
/// write-then-read check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeMode {
    /// The address taken modulo the real capacity: a write past it lands on
    /// earlier data.
    Wrap,
    /// Writes past the real capacity are lost; reads there return zeros.
    DropZeros,
    /// Writes past the real capacity are lost; reads there return what the
    /// block held when the card was made (seeded garbage).
    DropStale,
    /// Addresses wrap at `fake_module`, and within each wrap only the first
    /// `real_capacity` hold data; writes past it are lost and read as zeros
    /// (f3's "chain": a wrap over a module that is itself short).
    Chain,
}

/// What never-written blocks read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Erased {
    Zeros,
    Ones,
}

/// Which free erase block takes new data (`wear_leveling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WearLeveling {
    /// The block freed last: a cheap controller's stack of free blocks,
    /// so the few blocks that cycle through it take the erases.
    None,
    /// The free block erased least (dynamic wear levelling): erases
    /// spread over every block that ever comes free; data never moved
    /// stays where it is.
    Dynamic,
    /// Dynamic, and cold data is moved off the least worn blocks once the
    /// spread passes a threshold, so every block shares the erases.
    Static,
}

impl WearLeveling {
    /// The key's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            WearLeveling::None => "none",
            WearLeveling::Dynamic => "dynamic",
            WearLeveling::Static => "static",
        }
    }
}

/// The NAND cell type (`cell`), which sets the endurance prior
/// [`Cell::rated_pe_cycles`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Slc,
    Mlc,
    Tlc,
    Qlc,
}

impl Cell {
    pub const ALL: [Cell; 4] = [Cell::Slc, Cell::Mlc, Cell::Tlc, Cell::Qlc];

    pub fn as_str(self) -> &'static str {
        match self {
            Cell::Slc => "slc",
            Cell::Mlc => "mlc",
            Cell::Tlc => "tlc",
            Cell::Qlc => "qlc",
        }
    }

    /// Program/erase cycles a block of this cell type is rated for, when
    /// `pe_cycles` does not say: the low end of each range in "Kalstor, NAND
    /// types" (SLC 50,000-100,000, MLC 3,000-10,000, 3D TLC 1,000-3,000, QLC
    /// 100-1,000), which "Transcend, NAND types" bounds from above ("up to
    /// 50,000", "up to 3,000", "fewer than 1,500"; both in
    /// `docs/SOURCES.md`). The low end, because a life estimate must not
    /// promise more than the cells may give.
    pub fn rated_pe_cycles(self) -> u64 {
        match self {
            Cell::Slc => 50_000,
            Cell::Mlc => 3_000,
            Cell::Tlc => 1_000,
            Cell::Qlc => 100,
        }
    }
}

/// One key of the table: what `sim show` prints and what [`Params::set`]
/// and [`Params::get`] go through.
pub struct Param {
    pub key: &'static str,
    pub unit: &'static str,
    pub doc: &'static str,
    /// The value of [`Params::default`], as text.
    pub default: &'static str,
    set: fn(&mut Params, &str) -> Result<(), ParamError>,
    get: fn(&Params) -> String,
}

/// A combination [`Params::validate`] rejects: `key` is the one at fault.
fn impossible(key: &'static str, why: String) -> Result<(), ParamError> {
    Err(ParamError::Impossible { key, why })
}

/// Raw erase blocks behind `logical` ones when `spare` of the raw flash is
/// beyond them: the fewest whole blocks that hold that share.
pub fn raw_blocks(logical: u64, spare: f64) -> u64 {
    (logical as f64 / (1.0 - spare)).ceil() as u64
}

/// A table default, parsed by its own codec; `defaults_parse` checks each.
fn default_of<T, C: Codec<T>>(key: &str, text: &str) -> T {
    match C::parse(key, text) {
        Ok(v) => v,
        Err(e) => panic!("the default of {key} does not parse: {e}"),
    }
}

/// The one definition of every key: `field: type = codec, "default", "unit",
/// "meaning";`. It generates [`Params`], its [`Default`] and [`KEYS`].
macro_rules! params {
    ($( $(#[doc = $fdoc:literal])* $field:ident: $ty:ty = $codec:ty, $default:literal, $unit:literal, $doc:literal; )*) => {
        /// Every parameter of a simulated card plus its host. Times in
        /// nanoseconds, sizes in bytes, rates in bytes per second.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Params {
            $( $(#[doc = $fdoc])* #[doc = $doc] pub $field: $ty, )*
        }

        impl Default for Params {
            /// A plain 8 GiB SD card behind a 4-bit 50 MHz host: a neutral
            /// base the profiles override.
            fn default() -> Self {
                Params { $( $field: default_of::<$ty, $codec>(stringify!($field), $default), )* }
            }
        }

        /// Every key [`Params::set`] accepts, in display order.
        pub const KEYS: &[Param] = &[ $( Param {
            key: stringify!($field),
            unit: $unit,
            doc: $doc,
            default: $default,
            set: |p, v| {
                p.$field = <$codec as Codec<$ty>>::parse(stringify!($field), v)?;
                Ok(())
            },
            get: |p| <$codec as Codec<$ty>>::show(&p.$field),
        }, )* ];
    };
}

params! {
    capacity: u64 = Size, "8G", "bytes", "announced capacity";
    sector_size: u32 = SectorSize, "512", "bytes", "logical block size (512 or 4096)";
    /// Effective NAND page (page x planes written together).
    page_size: u64 = Size, "16K", "bytes", "effective NAND page (page x planes)";
    au_size: u64 = Size, "4M", "bytes", "allocation unit / erase block; any multiple of the page";
    fat_area_aus: u64 = Int, "0", "AUs", "leading AUs that take small random writes cheaply";
    open_aus_linear: u64 = Int, "4", "AUs", "AUs open at once for in-order writes";
    open_aus_random: u64 = Int, "2", "AUs", "AUs open at once for random-order writes";
    page_read_ns: u64 = Int, "60000", "ns", "NAND page read";
    page_program_ns: u64 = Int, "1200000", "ns", "NAND page program";
    /// The page program of AU 0, AU 1, ... where the leading AUs program
    /// at a speed of their own: faster where SLC backs them, as Bradford's
    /// Flashbenching says some cards do, or slower, as its `--find-fat`
    /// table writes the Kingston card's AU 0 at 0.73-0.88 and AU 1 at
    /// 0.83-0.98 of the speed of AUs 3-5, at every chunk size from 2 MiB
    /// to 16 KiB (calibration/kingston_sa04g_find_fat.csv; the post does
    /// not say why).
    lead_program_ns: Vec<u64> = NsList, "none", "ns", "page program of AU 0, AU 1, ... (`;` between; none: page_program_ns everywhere)";
    /// The page program of the writes that open an AU: an unbroken
    /// in-order run from its first page, which ends when a write goes
    /// elsewhere. Arnd Bergmann's Toshiba rows (calibration/bergmann_open_au.csv,
    /// 6 and 7 AUs in order) fall from 13.6 MB/s at 256 KiB chunks to
    /// 5.91 at 4 MiB, where one page cost at every chunk gave 10.6 for
    /// all; the time of each row is its first chunk in every AU at about
    /// 6 MB/s and the rest at about 15 (all eleven rows within 6%): the
    /// card writes a lone stream into an AU slower than the same AU's
    /// pages once other AUs' writes come between (the post does not say
    /// why). It wins over `lead_program_ns` in an opening run.
    start_program_ns: u64 = Int, "0", "ns", "page program of an unbroken in-order run from an AU's first page (0: page_program_ns)";
    au_erase_ns: u64 = Int, "3000000", "ns", "erase of one AU";
    /// Garbage collection cost per page moved (on-chip copy-back); 0 means a
    /// page read plus a page program.
    copy_page_ns: u64 = Int, "0", "ns", "GC cost per page moved (0 = page read + program)";
    /// Extra time when a read crosses an AU boundary (a second block lookup).
    au_cross_read_ns: u64 = Int, "50000", "ns", "extra read cost crossing an AU boundary";
    /// Extra time per random-order (out of sequence) write inside an open AU.
    random_write_ns: u64 = Int, "500000", "ns", "extra cost of an out-of-order write in an open AU";
    random_page_ns: u64 = Int, "0", "ns", "extra cost per page of an out-of-order write (a card that writes random-mode pages twice)";
    /// Whether a log begun past its AU's first page stays open once written
    /// to the AU's end (it holds the tail, not a whole block), so a write
    /// that comes back to the AU's start turns it random and merges it;
    /// false: it replaces the data block at once, as a log from the start
    /// does. Bradford's Flashbenching `--open-au --random` rows at 2 MiB
    /// (two chunks an AU, the second behind the first) run at 2.1-2.9 MB/s
    /// against 5.2 in order: the Kingston card keeps such logs open.
    tail_log_open: bool = Flag, "false", "bool", "a log begun mid-AU stays open at the AU's end, so a write back at its start merges it";
    /// Card-side read access time per read command (SD spec 5.3.2 TAAC/NSAC:
    /// the controller locating the data before the first block).
    card_access_ns: u64 = Int, "100000", "ns", "card read access time per read command (TAAC)";
    /// Extra read access when a read does not continue from the page the card
    /// last read (a translation-table lookup instead of a read-buffer hit).
    random_read_ns: u64 = Int, "0", "ns", "extra read access when the read misses the card's read buffer";
    /// The ECC codeword: the card moves a page's data out of the NAND in
    /// whole codewords, so a read that touches more of them than its
    /// length needs moves the extra ones too. Bradford's `flashbench -a`
    /// rows show that step below the 16 KiB page, 11.8-19 us at 2-8 KiB
    /// (calibration/kingston_sa04g_align.csv).
    codeword_size: Option<u64> = MaybeSize, "none", "bytes", "ECC codeword, what the card moves out of a page at once (none: no step below the page)";
    codeword_read_ns: u64 = Int, "0", "ns", "read cost of each codeword a read touches beyond what its length needs";
    /// Card-side time to close each write command (mapping update, commit).
    write_commit_ns: u64 = Int, "0", "ns", "card time closing each write command";
    /// Extra cost when a write command ends or starts inside a page: the card
    /// merges the partial page in its buffer block (read-modify-write).
    partial_page_write_ns: u64 = Int, "0", "ns", "extra cost of a write command ending inside a page";
    /// Extra latency of the first command after the card was idle (wake-up).
    wake_ns: u64 = Int, "0", "ns", "extra latency of the first command after idle";
    /// Page-mapped FTL (eMMC, SSD): every AU takes writes in any order without
    /// merging, only `random_write_ns` extra for a non-sequential one; it
    /// collects garbage once `spare` runs out.
    page_mapped: bool = Flag, "false", "bool", "page-mapped FTL: no AU merges (garbage collection only with spare)";
    /// Raw flash beyond the capacity, as a share of the raw flash, for the
    /// page-mapped part (a `page_mapped` card, or the FAT area): once its
    /// free blocks run out, garbage collection copies the valid pages of
    /// the emptiest block (greedy) and erases it. `none`: free blocks never
    /// run out, the model before it had spare.
    spare: Option<f64> = MaybeFraction, "none", "fraction", "page-mapped flash: raw flash beyond the capacity, share of the raw (none: never collects)";
    wear_leveling: WearLeveling = WearLevelingCodec, "none", "none|dynamic|static", "which free block takes new data (the last freed, or the least erased), and whether cold data moves";
    cell: Cell = CellCodec, "mlc", "slc|mlc|tlc|qlc", "NAND cell type: sets pe_cycles when that is 0";
    pe_cycles: u64 = Int, "0", "cycles", "program/erase cycles a block is rated for (0: the cell type's)";
    keep_data: bool = Flag, "true", "bool", "keep written data (false: timing only)";
    erased: Erased = ErasedCodec, "zeros", "zeros|ones", "what never-written blocks read as";
    real_capacity: Option<u64> = MaybeSize, "none", "bytes", "fake card: what it really holds (fake_mode says what happens past it)";
    fake_mode: FakeMode = FakeModeCodec, "wrap", "wrap|drop-zeros|drop-stale|chain", "fake card past real_capacity: addresses wrap, or writes are lost and reads give zeros or old data, or (chain) addresses wrap at fake_module and past real_capacity within each wrap writes are lost";
    fake_module: Option<u64> = MaybeSize, "none", "bytes", "chain fake: where addresses wrap (more than real_capacity)";
    write_cache: u64 = Size, "0", "bytes", "fake card's write cache: the last this many bytes written read back correctly at any address";
    bad_ranges: Vec<(u64, u64)> = Ranges, "none", "START+LEN;...", "byte ranges that return I/O errors";
    jitter: f64 = Fraction, "0.0", "fraction", "seeded timing noise, 0 to 1";
    /// Real-world noise, off in every built-in profile (USB
    /// readers show requests 10 to 100 times slower than their neighbours,
    /// speed drifting with temperature and background garbage collection).
    outlier_fraction: f64 = Fraction, "0.0", "fraction", "share of commands that take outlier_factor times longer";
    outlier_factor: u64 = Int, "20", "times", "how much slower an outlier command is";
    drift: f64 = Fraction, "0.0", "fraction", "slow speed drift: card time varies by up to this share";
    drift_period_ns: u64 = Int, "60000000000", "ns", "period of the drift";
    gc_pause_fraction: f64 = Fraction, "0.0", "fraction", "share of requests after which a background GC pause comes";
    gc_pause_ns: u64 = Int, "50000000", "ns", "length of a background GC pause";
    seed: u64 = Int, "1", "integer", "seed for jitter";
    card_type: String = CardType, "SD", "SD|MMC|CF", "register layout";
    cid: Option<String> = Reg16, "none", "hex", "CID register";
    csd: Option<String> = Reg16, "none", "hex", "CSD register";
    scr: Option<String> = Reg8, "none", "hex", "SCR register";
    ssr: Option<String> = Reg64, "none", "hex", "SSR register";
    host: String = Name, "generic", "preset", "host preset (sets every key below)";
    protocol: Protocol = ProtocolCodec, "mmc", "mmc|ata_pio", "bus protocol";
    bus_width: u32 = Lines, "4", "bits", "1, 4 or 8 data lines";
    clock_hz: u64 = Int, "50000000", "Hz", "bus clock";
    ddr: bool = Flag, "false", "bool", "data on both clock edges";
    /// 1 = single-block commands only.
    max_blocks_per_cmd: u64 = Int, "1024", "blocks", "1 = single-block commands only";
    /// Pre-set block count (CMD23) instead of a stop command after multi-block.
    set_block_count: bool = Flag, "true", "bool", "CMD23 pre-set count instead of a stop command";
    /// Host software time per command (driver path, request setup).
    host_overhead_ns: u64 = Int, "20000", "ns", "host software time per command";
    /// Host CPU time per block while data streams (copying, byte-swapping).
    host_block_ns: u64 = Int, "0", "ns", "host CPU time per block while data streams";
    /// Host time after each write command (busy wait, status poll).
    write_status_ns: u64 = Int, "0", "ns", "host time after each write command (busy wait, status)";
    /// Host time per interrupt; one per block or one per command.
    irq_ns: u64 = Int, "5000", "ns", "host time per interrupt";
    irq_per_block: bool = Flag, "false", "bool", "one interrupt per block (else per command)";
    queue_depth: u64 = Int, "1", "requests", "host software queue depth";
    in_flight: u64 = Int, "1", "requests", "requests the host keeps in flight at once";
    /// ATA PIO: command to first data (DRQ) delay.
    ata_cmd_to_data_ns: u64 = Int, "0", "ns", "ATA PIO: command to data ready";
    /// ATA PIO: time to move one sector by PIO (reads).
    ata_pio_sector_ns: u64 = Int, "0", "ns", "ATA PIO: one sector by PIO, reads";
    /// ATA PIO: time to move one sector by PIO (writes).
    ata_pio_write_sector_ns: u64 = Int, "0", "ns", "ATA PIO: one sector by PIO, writes";
    /// ATA PIO: delay from one sector to the next inside a multi-sector command.
    ata_next_sector_ns: u64 = Int, "0", "ns", "ATA PIO: next sector ready inside a multi-sector command";
}

impl Params {
    /// Set one key from its text form. `host` applies the preset's settings
    /// first, then records its name.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), ParamError> {
        let v = v.trim().trim_matches('"');
        if key == "host" {
            let preset = super::hosts::find(v).ok_or_else(|| ParamError::UnknownHost(v.to_string()))?;
            for (k, val) in preset.settings {
                self.set(k, val)?;
            }
            self.host = v.to_string();
            return Ok(());
        }
        let k = KEYS
            .iter()
            .find(|k| k.key == key)
            .ok_or_else(|| ParamError::UnknownKey(key.to_string()))?;
        (k.set)(self, v)
    }

    /// One key's value as TOML text; empty for an unknown key.
    pub fn get(&self, key: &str) -> String {
        KEYS.iter()
            .find(|k| k.key == key)
            .map_or(String::new(), |k| (k.get)(self))
    }

    /// The page program time in AU `au`: `lead_program_ns`'s where it
    /// names the AU, `page_program_ns` elsewhere.
    pub fn program_ns(&self, au: u64) -> u64 {
        usize::try_from(au)
            .ok()
            .and_then(|i| self.lead_program_ns.get(i))
            .copied()
            .unwrap_or(self.page_program_ns)
    }

    /// Erase blocks of the page-mapped part: the whole card when it is
    /// `page_mapped`, else its FAT area (validated to lie inside the card).
    pub fn page_mapped_blocks(&self) -> u64 {
        if self.page_mapped {
            self.capacity.div_ceil(self.au_size)
        } else {
            self.fat_area_aus
        }
    }

    /// Program/erase cycles a block is rated for: `pe_cycles`, or the cell
    /// type's ([`Cell::rated_pe_cycles`]) where that is 0.
    pub fn rated_pe_cycles(&self) -> u64 {
        if self.pe_cycles > 0 {
            self.pe_cycles
        } else {
            self.cell.rated_pe_cycles()
        }
    }

    /// Every key with its current value, as TOML (what `sim show --toml` prints and
    /// `sim:FILE.toml` reads back).
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        for k in KEYS {
            out.push_str(&format!("{} = {}  # {} ({})\n", k.key, (k.get)(self), k.doc, k.unit));
        }
        out
    }

    /// Apply a TOML document (a flat table of keys). `host` is applied first so the
    /// file's own host keys override the preset, as on the command line.
    pub fn apply_toml(&mut self, text: &str, path: &str) -> Result<(), ParamError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            // The line and the key it sets, where the parser says where:
            // its own message names neither (an integer past 2^63 - 1).
            let line = e
                .span()
                .and_then(|s| text.get(..s.start))
                .map(|before| before.matches('\n').count() + 1);
            let key = line
                .and_then(|n| text.lines().nth(n - 1))
                .and_then(|l| l.split_once('='))
                .map(|(k, _)| k.trim())
                .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
            let at = match (line, key) {
                (Some(n), Some(k)) => format!("line {n}, {k}: "),
                (Some(n), None) => format!("line {n}: "),
                _ => String::new(),
            };
            // The crate's words for an integer past TOML's range ("u64
            // value was too large" for 2^63, "as i128" for 2^64) read as
            // if the key's own type were too small.
            let message = e.message();
            let why = if message.contains("too large") || message.contains("as i128") {
                format!("an integer past {}, the largest TOML holds", i64::MAX)
            } else {
                message.to_string()
            };
            ParamError::File {
                path: path.to_string(),
                why: format!("{at}{why}"),
            }
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
        // A value TOML itself cannot hold names its line and key.
        let e = q
            .apply_toml("au_size = \"4M\"\npage_program_ns = 9223372036854775808\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "f.toml: line 2, page_program_ns: an integer past 9223372036854775807, the largest TOML holds"
        );
    }

    #[test]
    fn defaults_parse_and_show_as_written() {
        let p = Params::default();
        for k in KEYS {
            let mut q = Params::default();
            q.set(k.key, k.default).unwrap();
            assert_eq!(q, p, "{}", k.key);
            assert!(!p.get(k.key).is_empty(), "{}", k.key);
        }
        assert_eq!((p.capacity, p.page_size, p.au_size), (8 << 30, 16 << 10, 4 << 20));
        assert_eq!(p.host, "generic");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let mut p = Params::default();
        assert_eq!(p.set("au_sise", "4M"), Err(ParamError::UnknownKey("au_sise".into())));
        assert!(matches!(p.set("au_size", "four"), Err(ParamError::BadValue { key, .. }) if key == "au_size"));
        assert!(matches!(p.set("jitter", "2"), Err(ParamError::BadValue { key, .. }) if key == "jitter"));
        assert!(matches!(p.set("cid", "abc"), Err(ParamError::BadValue { key, .. }) if key == "cid"));
        // 2^64 is too large, not "not an integer".
        let big = p
            .set("page_program_ns", "18446744073709551616")
            .unwrap_err()
            .to_string();
        assert!(
            big.contains("page_program_ns") && big.contains("too large: at most 18446744073709551615"),
            "{big}"
        );
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
        check("write_cache", "1G", "write_cache");
        check("write_cache", "1000", "write_cache"); // not whole sectors
        check("lead_program_ns", &vec!["1000"; 2049].join(";"), "lead_program_ns"); // 2048 AUs
        check("lead_program_ns", "1;100000000001", "lead_program_ns"); // past 100 s
        check("bus_width", "2", "bus_width");
        check("in_flight", "4", "in_flight");
        // An outlier of a 100-second step a trillion times over: the
        // clock's overflow, a panic before the bound.
        check("outlier_factor", "1000000000000", "outlier_factor");
        // The card written whole in 2,024 years at 1 Hz: life's replay
        // overflowed the clock and panicked.
        check("clock_hz", "1", "clock_hz");
        let mut p = Params::default();
        p.set("clock_hz", "1000").unwrap();
        assert!(p.validate().is_ok(), "2 years to write whole: allowed");
        let mut p = Params::default();
        p.set("au_size", "12M").unwrap(); // 3 x 2^22: allowed
        p.set("capacity", "12G").unwrap();
        assert!(p.validate().is_ok());
    }
}
