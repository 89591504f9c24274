//! One card under a trace, pass by pass: the trace changed as a what-if
//! asks ([`Variant`]), fed to the card at its own arrival times, and the
//! last pass's flash work, wear, latency and costs kept.

use std::collections::{BTreeSet, HashMap};

use hdrhistogram::Histogram;

use super::costs::Costs;
use super::{ByCause, CardLife, EraseCount, LatencyNs, PerDay, Replay, years};
use crate::sim::SimTarget;
use crate::sim::ftl::FlashWork;
use crate::sim::replay::{ReplayError, TraceOp, TraceRecord};
use crate::targets::Target;

/// A trace as a what-if changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// Hold writes in RAM and write each dirty 4 KiB block once per this
    /// many ns of the trace's clock (a longer commit interval, log2ram).
    /// Flushes are held with them, as log2ram holds them; a filesystem
    /// that honours fsync within its commit interval writes more, so this
    /// is the bound such a setting approaches.
    pub coalesce_ns: Option<u64>,
    /// Bytes added to every offset: the partition moved.
    pub shift: u64,
    /// Discards reach the card.
    pub discard: bool,
}

impl Default for Variant {
    fn default() -> Self {
        Variant {
            coalesce_ns: None,
            shift: 0,
            discard: true,
        }
    }
}

/// What the page cache coalesces: 4 KiB, the page of every Linux
/// architecture flashlab runs on but a few (mm/Kconfig's PAGE_SIZE).
const DIRTY_UNIT: u64 = 4096;

/// The most a coalesced writeback sends as one request: 512 KiB, the
/// largest request the block layer builds for an MMC host by default
/// (`max_sectors_kb` of 512 on this machine's mmc and loop queues).
const WRITEBACK_MAX: u64 = 512 << 10;

/// Why a replay stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifeError {
    #[error("{0}")]
    Card(#[from] ReplayError),
}

/// A request's latency is counted up to an hour, at three significant
/// digits (as bench counts its own).
const LONGEST_NS: u64 = 3_600_000_000_000;

/// The replay of one card, across passes.
pub struct Pass {
    card: SimTarget,
    variant: Variant,
    /// AUs the trace writes (after the shift): the steady state's fill.
    footprint: BTreeSet<u64>,
    /// The first record's time in this pass: the trace's clock starts there.
    first_ns: Option<u64>,
    /// Where this pass starts on the model's clock.
    clock_offset: u64,
    /// The last record's time in this pass, from `first_ns`.
    last_ns: u64,
    dirty: BTreeSet<u64>,
    next_writeback: u64,
    // The window: the pass being measured.
    work_before: FlashWork,
    host_before: u64,
    erases_before: HashMap<u64, u64>,
    latency: Histogram<u64>,
    stall_ns: u64,
    costs: Costs,
    /// The last finished pass: its work and the host bytes it wrote.
    window: Option<(FlashWork, u64)>,
    /// The most erases one block took in the last finished pass.
    window_most: u64,
    /// Blocks by their erases in the last finished pass.
    window_histogram: std::collections::BTreeMap<u64, u64>,
    /// Every block's erases when the first pass began, and the trace time
    /// replayed since: the hottest block's rate over every pass, not one
    /// (a pass of a few minutes erases a block once or not at all).
    erases_at_first: Option<HashMap<u64, u64>>,
    replayed_ns: u64,
    hottest_since_first: u64,
}

impl Pass {
    pub fn new(card: SimTarget, variant: Variant) -> Pass {
        Pass {
            card,
            variant,
            footprint: BTreeSet::new(),
            first_ns: None,
            clock_offset: 0,
            last_ns: 0,
            dirty: BTreeSet::new(),
            next_writeback: 0,
            work_before: FlashWork::default(),
            host_before: 0,
            erases_before: HashMap::new(),
            latency: Histogram::new_with_bounds(1, LONGEST_NS, 3).expect("1 ns to an hour at 3 digits is valid"),
            stall_ns: 0,
            costs: Costs::default(),
            window: None,
            window_most: 0,
            window_histogram: std::collections::BTreeMap::new(),
            erases_at_first: None,
            replayed_ns: 0,
            hottest_since_first: 0,
        }
    }

    /// The record's range moved by the shift, or why the card cannot take it.
    fn shifted(&self, r: &TraceRecord) -> Result<TraceRecord, LifeError> {
        let size = self.card.params.capacity;
        let past = || ReplayError::PastEnd {
            offset: r.offset.saturating_add(self.variant.shift),
            len: r.len,
            size,
        };
        let offset = r.offset.checked_add(self.variant.shift).ok_or_else(past)?;
        if offset.checked_add(r.len).is_none_or(|end| end > size) {
            return Err(past().into());
        }
        Ok(TraceRecord { offset, ..*r })
    }

    /// Note the AUs `r` writes, for [`Pass::fill`].
    pub fn survey(&mut self, r: &TraceRecord) -> Result<(), LifeError> {
        let r = self.shifted(r)?;
        if r.op == TraceOp::Write && r.len > 0 {
            let au = self.card.params.au_size;
            self.footprint.extend(r.offset / au..=(r.offset + r.len - 1) / au);
        }
        Ok(())
    }

    /// Write every AU of the footprint whole, in order: a card in use
    /// holds data wherever the workload writes.
    pub fn fill(&mut self) -> Result<(), LifeError> {
        let au = self.card.params.au_size;
        let at = self.card.device_time_ns();
        for &n in &self.footprint {
            let w = TraceRecord {
                time_ns: at,
                op: TraceOp::Write,
                offset: n * au,
                len: au.min(self.card.params.capacity - n * au),
            };
            self.card.replay(&w, 0)?;
        }
        self.clock_offset = self.card.device_time_ns().saturating_add(1_000_000_000);
        Ok(())
    }

    /// Start a pass: what the card has done so far is the baseline.
    pub fn begin(&mut self) {
        self.work_before = self.card.ftl.work;
        self.host_before = self.card.counters.bytes_written;
        self.erases_before = self.card.ftl.erases_by_block().into_iter().collect();
        if self.erases_at_first.is_none() {
            self.erases_at_first = Some(self.erases_before.clone());
        }
        self.latency.reset();
        self.stall_ns = 0;
        self.costs = Costs::default();
        self.first_ns = None;
        self.last_ns = 0;
        self.dirty.clear();
        self.next_writeback = self.variant.coalesce_ns.unwrap_or(0);
    }

    /// One record of the trace, as the variant changes it.
    pub fn record(&mut self, r: &TraceRecord) -> Result<(), LifeError> {
        let first = *self.first_ns.get_or_insert(r.time_ns);
        let rel = TraceRecord {
            time_ns: r.time_ns.saturating_sub(first),
            ..self.shifted(r)?
        };
        self.last_ns = self.last_ns.max(rel.time_ns);
        let Some(interval) = self.variant.coalesce_ns else {
            return self.feed(&rel);
        };
        while rel.time_ns >= self.next_writeback {
            self.write_back(self.next_writeback)?;
            // Skip the idle intervals at once.
            let behind = (rel.time_ns - self.next_writeback) / interval;
            self.next_writeback += (behind + 1) * interval;
        }
        let units = rel.offset / DIRTY_UNIT..(rel.offset + rel.len).div_ceil(DIRTY_UNIT);
        match rel.op {
            TraceOp::Write => self.dirty.extend(units),
            TraceOp::Flush => {}
            TraceOp::Discard => {
                let held: Vec<u64> = self.dirty.range(units).copied().collect();
                for u in held {
                    self.dirty.remove(&u);
                }
                self.feed(&rel)?;
            }
            TraceOp::Read => self.feed(&rel)?,
        }
        Ok(())
    }

    /// The dirty blocks written at `time_ns`, in runs of adjacent ones.
    fn write_back(&mut self, time_ns: u64) -> Result<(), LifeError> {
        let dirty = std::mem::take(&mut self.dirty);
        let mut run: Option<(u64, u64)> = None;
        let max_units = WRITEBACK_MAX / DIRTY_UNIT;
        for u in dirty {
            match run {
                Some((start, n)) if start + n == u && n < max_units => run = Some((start, n + 1)),
                _ => {
                    if let Some((start, n)) = run {
                        self.write_run(time_ns, start, n)?;
                    }
                    run = Some((u, 1));
                }
            }
        }
        if let Some((start, n)) = run {
            self.write_run(time_ns, start, n)?;
        }
        Ok(())
    }

    fn write_run(&mut self, time_ns: u64, start: u64, units: u64) -> Result<(), LifeError> {
        let offset = start * DIRTY_UNIT;
        let len = (units * DIRTY_UNIT).min(self.card.params.capacity - offset);
        self.feed(&TraceRecord {
            time_ns,
            op: TraceOp::Write,
            offset,
            len,
        })
    }

    /// Give the card one request (times from the pass's start).
    fn feed(&mut self, r: &TraceRecord) -> Result<(), LifeError> {
        if r.op == TraceOp::Discard && !self.variant.discard {
            return Ok(());
        }
        let before = self.card.ftl.work.flash_pages();
        let done = self.card.replay(r, self.clock_offset)?;
        if matches!(r.op, TraceOp::Read | TraceOp::Write) {
            let arrival = r.time_ns.saturating_add(self.clock_offset);
            self.latency
                .saturating_record(done.complete_ns.saturating_sub(arrival).max(1));
            self.stall_ns += done.merge_ns;
        }
        if r.op == TraceOp::Write {
            let pages = self.card.ftl.work.flash_pages() - before;
            self.costs.add(self.card.params.au_size, r.offset, r.len, pages);
        }
        Ok(())
    }

    /// End a pass: write back what is held, and keep its work.
    pub fn end(&mut self) -> Result<(), LifeError> {
        if self.variant.coalesce_ns.is_some() {
            self.write_back(self.last_ns)?;
        }
        let work = self.card.ftl.work.since(&self.work_before);
        let host = self.card.counters.bytes_written - self.host_before;
        self.window = Some((work, host));
        self.window_histogram.clear();
        self.hottest_since_first = 0;
        let first = self.erases_at_first.as_ref();
        for (b, n) in self.card.ftl.erases_by_block() {
            let here = n - self.erases_before.get(&b).copied().unwrap_or(0);
            if here > 0 {
                *self.window_histogram.entry(here).or_insert(0) += 1;
            }
            let since = n - first.and_then(|f| f.get(&b)).copied().unwrap_or(0);
            self.hottest_since_first = self.hottest_since_first.max(since);
        }
        self.replayed_ns = self.replayed_ns.saturating_add(self.last_ns);
        self.window_most = self.window_histogram.keys().next_back().copied().unwrap_or(0);
        // The next pass starts after this one on the model's clock, and
        // after the card has caught up.
        // Saturating: a clock past its limit ends the next pass's first
        // request (ReplayError::PastClock).
        self.clock_offset = (self.card.device_time_ns())
            .max(self.clock_offset.saturating_add(self.last_ns))
            .saturating_add(1_000_000);
        Ok(())
    }

    /// The last pass's amplification.
    pub fn window_waf(&self) -> Option<f64> {
        let (work, host) = self.window?;
        work.amplification(self.card.params.page_size, host)
    }

    /// The answer for this card, from the last pass.
    pub fn finish(self, spec: &str, how: Replay, passes: u32, settled: bool) -> super::CardLife {
        let p = &self.card.params;
        let page = p.page_size;
        let (work, host) = self.window.unwrap_or_default();
        let report = self.card.flash_report();
        let days = self.last_ns as f64 / 86_400e9;
        let per_day = (days > 0.0).then(|| PerDay {
            host_bytes: host as f64 / days,
            flash_bytes: (work.flash_pages() * page) as f64 / days,
            erases: work.erases as f64 / days,
        });
        let pe_cycles = years::pe_prior(report.rated_pe_cycles, how.pe);
        let wear = years::Wear {
            policy: p.wear_leveling,
            blocks: report.blocks,
            // Blocks that take the trace's data: erased so far, or at least
            // the AUs it writes (a page-mapped card erases none of them
            // until its spare runs out).
            blocks_erased: report.blocks_erased.max(self.footprint.len() as u64),
            hottest_per_day: self.hottest_since_first as f64
                / (self.replayed_ns as f64 / 86_400e9).max(f64::MIN_POSITIVE),
        };
        // In the long run every page programmed is erased again with its
        // block: a card that has not had to collect yet (page-mapped, its
        // spare still free) only defers those erases.
        let long_run = per_day.map(|d| d.erases.max(d.flash_bytes / p.au_size as f64));
        let years = long_run.and_then(|e| years::years(&pe_cycles, &wear, days, e));
        let under = |policy| {
            let w = years::Wear { policy, ..wear };
            long_run
                .and_then(|e| years::years(&pe_cycles, &w, days, e))
                .map(|y| y.p50)
        };
        use crate::sim::params::WearLeveling;
        let years_p50_by_wear_leveling = super::ByWearLeveling {
            none: under(WearLeveling::None),
            dynamic: under(WearLeveling::Dynamic),
            r#static: under(WearLeveling::Static),
        };
        let q = |f: f64| self.latency.value_at_quantile(f);
        CardLife {
            card: spec.to_string(),
            start: how.start,
            passes,
            settled,
            host_bytes_written: host,
            flash_bytes_written: work.flash_pages() * page,
            waf: work.amplification(page, host),
            by_cause: ByCause {
                host: (work.host_pages - work.rmw_pages) * page,
                merge: work.merge_copies * page,
                gc: work.gc_copies * page,
                partial_page: work.rmw_pages * page,
                wear: work.wear_copies * page,
            },
            erases: work.erases,
            erase_count: EraseCount {
                mean: work.erases as f64 / report.blocks.max(1) as f64,
                max: self.window_most,
            },
            per_day,
            pe_cycles,
            wear_leveling: p.wear_leveling.as_str().to_string(),
            years,
            years_p50_by_wear_leveling,
            latency_ns: LatencyNs {
                p50: q(0.5),
                p99: q(0.99),
                max: self.latency.max(),
            },
            stall_s: self.stall_ns as f64 / 1e9,
            costs: self.costs.most(work.flash_pages(), page),
            waf_by_pass: Vec::new(),
            erase_histogram: self.window_histogram.iter().map(|(&e, &b)| [e, b]).collect(),
        }
    }
}
