//! What [`Params::validate`] rejects: each bound and each combination
//! names the key at fault, before the model can overflow or allocate
//! without limit on it.

use super::*;

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
/// Most times slower an outlier command may be: ten times the worst the
/// `outlier_fraction` key's own note names (USB readers, 10 to 100 times),
/// so an outlier of the longest step stays within the clock's range.
const MAX_OUTLIER_FACTOR: u64 = 1000;
/// A year of seconds.
const YEAR_S: f64 = crate::units::YEAR_NS as f64 / 1e9;
/// Longest the card may take to be written whole once: ten years, as a
/// trace's span may run (see `validate_host`).
const WHOLE_WRITE_S: f64 = 10.0 * YEAR_S;
/// Fastest bus clock: 10 GHz, well above HS400's 200 MHz.
const MAX_CLOCK_HZ: u64 = 10_000_000_000;
/// Largest fake write cache: fakes keep a few MiB in their controller's RAM
/// (a cache that defeats write-then-read checks need not be large); 256 MiB
/// bounds the simulator's memory.
const MAX_WRITE_CACHE: u64 = 256 << 20;
/// Most failing ranges one card may list.
const MAX_BAD_RANGES: usize = 1024;

impl Params {
    /// Reject impossible combinations, naming the key at fault.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.validate_bounds()?;
        self.validate_geometry()?;
        self.validate_faults()?;
        self.validate_host()
    }

    /// Every size, time and count within what is accepted. Bounds first, so
    /// nothing below (or in the model) can overflow or allocate without
    /// limit: sizes a real card could have, times a real card could take.
    fn validate_bounds(&self) -> Result<(), ParamError> {
        let bounds: [(&'static str, u64, u64); 6] = [
            ("capacity", self.capacity, MAX_CAPACITY),
            ("outlier_factor", self.outlier_factor, MAX_OUTLIER_FACTOR),
            ("page_size", self.page_size, MAX_PAGE),
            ("au_size", self.au_size, MAX_AU),
            ("queue_depth", self.queue_depth, MAX_QUEUE),
            ("max_blocks_per_cmd", self.max_blocks_per_cmd, MAX_BLOCKS_PER_CMD),
        ];
        for (key, v, max) in bounds {
            if v > max {
                return impossible(key, format!("{v} is more than the largest accepted, {max}"));
            }
        }
        // Every time, the list's included (its text form does not parse
        // as one number).
        let lead = self.lead_program_ns.iter().map(|&v| ("lead_program_ns", v));
        for (key, v) in KEYS
            .iter()
            .filter(|k| k.unit == "ns")
            .map(|k| (k.key, self.get(k.key).parse().unwrap_or(0)))
            .chain(lead)
        {
            if v > MAX_NS {
                return impossible(key, format!("{v} ns is more than {} s", MAX_NS / 1_000_000_000));
            }
        }
        if self.clock_hz > MAX_CLOCK_HZ {
            return impossible("clock_hz", format!("{} is more than {MAX_CLOCK_HZ}", self.clock_hz));
        }
        if self.bad_ranges.len() > MAX_BAD_RANGES {
            return impossible("bad_ranges", format!("more than {MAX_BAD_RANGES} ranges"));
        }
        Ok(())
    }

    /// The card's layout, each unit whole in the one above it: sectors,
    /// pages, AUs, and the AU counts (open AUs, the FAT area) within the
    /// card. A step of its own because everything after it counts in these
    /// units.
    fn validate_geometry(&self) -> Result<(), ParamError> {
        if !matches!(self.sector_size, 512 | 4096) {
            return impossible("sector_size", format!("{} is neither 512 nor 4096", self.sector_size));
        }
        let s = u64::from(self.sector_size);
        if self.capacity == 0 || !self.capacity.is_multiple_of(s) {
            return impossible(
                "capacity",
                format!("{} is zero or not a multiple of the {s}-byte sector", self.capacity),
            );
        }
        if self.page_size == 0 || !self.page_size.is_multiple_of(s) {
            return impossible(
                "page_size",
                format!("{} is zero or not a multiple of the sector", self.page_size),
            );
        }
        if self.au_size == 0 || !self.au_size.is_multiple_of(self.page_size) {
            return impossible(
                "au_size",
                // In bytes: 4194000 as "4.00 MiB" looked like 4 MiB.
                format!(
                    "{} bytes ({}) is not a multiple of the page size {}",
                    self.au_size,
                    Iec(self.au_size),
                    Iec(self.page_size)
                ),
            );
        }
        if self.au_size > self.capacity {
            return impossible("au_size", format!("{} is larger than the capacity", Iec(self.au_size)));
        }
        let aus = self.capacity / self.au_size;
        if self.open_aus_linear == 0 || self.open_aus_linear > aus {
            return impossible(
                "open_aus_linear",
                format!(
                    "{} must be between 1 and the {aus} AUs of the card",
                    self.open_aus_linear
                ),
            );
        }
        if self.open_aus_random > aus {
            return impossible(
                "open_aus_random",
                format!("{} is more than the {aus} AUs of the card", self.open_aus_random),
            );
        }
        if self.fat_area_aus > aus {
            return impossible(
                "fat_area_aus",
                format!("{} is more than the {aus} AUs of the card", self.fat_area_aus),
            );
        }
        if let Some(cw) = self.codeword_size
            && (cw == 0 || !self.page_size.is_multiple_of(cw))
        {
            return impossible(
                "codeword_size",
                format!("{cw} is zero or does not divide the page size {}", Iec(self.page_size)),
            );
        }
        if self.codeword_read_ns > 0 && self.codeword_size.is_none() {
            return impossible(
                "codeword_read_ns",
                format!(
                    "{} ns a codeword, but codeword_size is none: no read would pay it",
                    self.codeword_read_ns
                ),
            );
        }
        if self.lead_program_ns.len() as u64 > aus {
            return impossible(
                "lead_program_ns",
                format!(
                    "{} AUs named, more than the {aus} AUs of the card",
                    self.lead_program_ns.len()
                ),
            );
        }
        self.validate_spare()
    }

    /// Spare must leave two raw blocks at least beyond the page-mapped
    /// region (one to write while collecting, one to collect into), and
    /// number its raw pages within u32 (the collector's map).
    fn validate_spare(&self) -> Result<(), ParamError> {
        let Some(spare) = self.spare else { return Ok(()) };
        let region = self.page_mapped_blocks();
        if region == 0 {
            return Ok(());
        }
        let raw = raw_blocks(region, spare);
        if raw < region + 2 {
            return impossible(
                "spare",
                format!(
                    "{spare} spare over {region} erase blocks makes {raw} raw ones: fewer than 2 beyond them, and \
                     garbage collection needs 2"
                ),
            );
        }
        // Raw pages are numbered in u32, one number kept for "stale".
        let raw_pages = raw.saturating_mul(self.au_size / self.page_size);
        if raw_pages >= u64::from(u32::MAX) {
            return impossible(
                "spare",
                format!(
                    "{raw_pages} raw pages of {} behind the page-mapped part: more than the model numbers (2^32 - 1)",
                    Iec(self.page_size)
                ),
            );
        }
        Ok(())
    }

    /// The faults a card is made with, a fake's real size, chain and cache
    /// and the ranges that fail, each inside the card and in whole sectors:
    /// a step of its own because these keys only make a card worse.
    fn validate_faults(&self) -> Result<(), ParamError> {
        let s = u64::from(self.sector_size);
        if let Some(real) = self.real_capacity
            && (real == 0 || real > self.capacity || !real.is_multiple_of(s))
        {
            return impossible(
                "real_capacity",
                format!("{real} must be a non-zero multiple of the sector, at most the capacity"),
            );
        }
        if self.fake_mode == FakeMode::Chain {
            let ok = match (self.real_capacity, self.fake_module) {
                (Some(real), Some(m)) => m > real && m <= self.capacity && m.is_multiple_of(s),
                _ => false,
            };
            if !ok {
                return impossible(
                    "fake_module",
                    "a chain fake needs real_capacity and a fake_module above it, at most the capacity, a multiple of the sector".into(),
                );
            }
        }
        if self.write_cache > MAX_WRITE_CACHE || !self.write_cache.is_multiple_of(s) {
            return impossible(
                "write_cache",
                format!(
                    "{} must be a multiple of the sector, at most {MAX_WRITE_CACHE}",
                    self.write_cache
                ),
            );
        }
        for &(start, len) in &self.bad_ranges {
            if len == 0 || start.checked_add(len).is_none_or(|e| e > self.capacity) {
                return impossible(
                    "bad_ranges",
                    format!("{start}+{len} is empty or passes the end of the card"),
                );
            }
        }
        Ok(())
    }

    /// The host's side of the bus: its width, clock, command size and
    /// queue, none of them zero. The last step: it speaks of the host the
    /// card sits behind, not of the card.
    fn validate_host(&self) -> Result<(), ParamError> {
        if !matches!(self.bus_width, 1 | 4 | 8) {
            return impossible("bus_width", format!("{} is not 1, 4 or 8", self.bus_width));
        }
        if self.clock_hz == 0 {
            return impossible("clock_hz", "must not be zero".into());
        }
        if self.max_blocks_per_cmd == 0 {
            return impossible("max_blocks_per_cmd", "must be at least 1".into());
        }
        if self.queue_depth == 0 || self.in_flight == 0 {
            return impossible("in_flight", "queue_depth and in_flight must be at least 1".into());
        }
        if self.in_flight > self.queue_depth {
            return impossible(
                "in_flight",
                format!("{} in flight exceeds queue_depth {}", self.in_flight, self.queue_depth),
            );
        }
        // The card written whole once, over its bus and into its pages,
        // within ten years of the model's clock (u64 nanoseconds hold
        // 584; `life` replays a trace up to 25 times on one clock, as a
        // trace's own span is held to ten years in `import::trace`).
        let bus_s = self.capacity as f64 * 8.0 / self.bus_width as f64 / self.clock_hz as f64;
        let lead_s = self
            .lead_program_ns
            .iter()
            .map(|&v| v.saturating_sub(self.page_program_ns) as f64)
            .sum::<f64>()
            * (self.au_size / self.page_size) as f64
            / 1e9;
        let program_s = (self.capacity / self.page_size) as f64 * self.page_program_ns as f64 / 1e9 + lead_s;
        if bus_s + program_s > WHOLE_WRITE_S {
            let (key, by) = if bus_s >= program_s {
                (
                    "clock_hz",
                    format!(
                        "{:.0} years on a {}-bit bus at {} Hz",
                        bus_s / YEAR_S,
                        self.bus_width,
                        self.clock_hz
                    ),
                )
            } else {
                (
                    "page_program_ns",
                    format!("{:.0} years programming its pages", program_s / YEAR_S),
                )
            };
            return impossible(
                key,
                format!("the card written whole once takes {by}: more than the model's 10 years"),
            );
        }
        Ok(())
    }
}
