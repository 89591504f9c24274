//! `life`: how long a card lasts under a workload, and why. A block trace
//! (what the device received, read by `import::trace`) is replayed on the
//! card model ([`crate::sim::replay`]), which counts every page it
//! programs, copies and erases by cause ([`crate::sim::ftl::FlashWork`]);
//! this turns one stretch of those counts into amplification, wear per day
//! and years ([`years`]), finds what costs most ([`costs`]), and replays
//! the same trace changed ([`Variant`]: coalesced, shifted, without
//! discards) for the what-ifs.
//!
//! A replay starts in one of two states ([`Start`]). Fresh is a new card.
//! Steady, the default, is a card in use: every AU the trace writes is
//! written whole first, then the trace runs again and again until its
//! amplification changes by less than [`SETTLED`] from one pass to the
//! next, and the last pass is the one reported. A card's first hour
//! under a workload is not its thousandth.

pub mod costs;
mod figures;
mod replay;
pub mod years;

use serde::{Deserialize, Serialize};

use crate::sim::SimTarget;
use crate::sim::replay::TraceRecord;
pub use replay::{LifeError, Pass, Variant};

/// Steady state: the amplification of one pass within this share of the
/// last one's. The issue that asked for `life` set it at 1%.
pub const SETTLED: f64 = 0.01;

/// Passes of the trace at most before a steady replay stops unsettled
/// (and says so): the step's budget in the model's work, since a replay
/// costs CPU, not device time.
pub const MAX_PASSES: u32 = 24;

/// Where a replay starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// A new card: nothing written, every block free.
    Fresh,
    /// A card in use: the trace's footprint written, the trace repeated
    /// until its amplification settles.
    #[default]
    Steady,
}

/// The trace as the device received it, counted once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Which reader took it (`blkparse`, `blktrace`, `fio-v3`, ...).
    pub format: String,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub discards: u64,
    pub flushes: u64,
    pub host_bytes_read: u64,
    pub host_bytes_written: u64,
    pub host_bytes_discarded: u64,
    /// From the first request to the last, seconds of the trace's clock.
    pub span_s: f64,
    /// The trace was cut short; read up to its last whole record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
    /// The trace's times went back: how often, by how much, and where
    /// first. Such records are taken at the time before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times_back: Option<String>,
    /// Requests the trace holds but names no place for, left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}

impl TraceSummary {
    /// Count one record.
    pub fn add(&mut self, r: &TraceRecord, first_ns: u64) {
        use crate::sim::replay::TraceOp;
        self.requests += 1;
        match r.op {
            TraceOp::Read => {
                self.reads += 1;
                self.host_bytes_read += r.len;
            }
            TraceOp::Write => {
                self.writes += 1;
                self.host_bytes_written += r.len;
            }
            TraceOp::Discard => {
                self.discards += 1;
                self.host_bytes_discarded += r.len;
            }
            TraceOp::Flush => self.flushes += 1,
        }
        self.span_s = self.span_s.max(r.time_ns.saturating_sub(first_ns) as f64 / 1e9);
    }
}

/// Flash bytes programmed, by what made the card program them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ByCause {
    /// The host's own data, in whole pages.
    pub host: u64,
    /// Pages copied by AU merges.
    pub merge: u64,
    /// Pages copied by page-mapped garbage collection.
    pub gc: u64,
    /// Partly written pages read, merged and programmed whole.
    pub partial_page: u64,
    /// Pages copied by static wear levelling.
    pub wear: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct EraseCount {
    /// Erases over every physical block of the card.
    pub mean: f64,
    /// The most erases one block took.
    pub max: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerDay {
    pub host_bytes: f64,
    pub flash_bytes: f64,
    pub erases: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
}

/// One figure under each way of levelling wear (`wear_leveling`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ByWearLeveling {
    pub none: Option<f64>,
    pub dynamic: Option<f64>,
    pub r#static: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyNs {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// One card under the trace: the replayed stretch's flash work and what
/// it comes to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CardLife {
    /// The card as given (`sim:kingston-sa04g`).
    pub card: String,
    pub start: Start,
    /// Passes of the trace replayed (the last one reported).
    pub passes: u32,
    /// A steady replay's amplification settled within [`SETTLED`]; false
    /// where [`MAX_PASSES`] ran out first (the figures are the last pass's).
    pub settled: bool,
    /// Host bytes written in the reported pass (after any what-if's change).
    pub host_bytes_written: u64,
    pub flash_bytes_written: u64,
    /// Flash bytes over host bytes written; absent where nothing was written.
    pub waf: Option<f64>,
    pub by_cause: ByCause,
    pub erases: u64,
    pub erase_count: EraseCount,
    /// Absent for a trace with no span (one instant).
    pub per_day: Option<PerDay>,
    /// The erase cycles one block takes, as the prior (or `--pe`) gives them.
    pub pe_cycles: Quantiles,
    /// How the card model levels wear (`wear_leveling`), which `years` follows.
    #[serde(default)]
    pub wear_leveling: String,
    /// Years until the most worn block reaches them; absent where nothing
    /// wore (or the trace has no span).
    pub years: Option<Quantiles>,
    /// The median years had the card levelled wear otherwise: no card
    /// publishes how it levels, and the answer turns on it.
    #[serde(default)]
    pub years_p50_by_wear_leveling: ByWearLeveling,
    pub latency_ns: LatencyNs,
    /// Seconds requests spent behind merges and collections.
    pub stall_s: f64,
    /// What costs most, first the most.
    pub costs: Vec<costs::Cost>,
    /// Each pass's amplification, in order: how the card settled.
    #[serde(default)]
    pub waf_by_pass: Vec<f64>,
    /// Blocks by the erases they took in the reported pass: [erases,
    /// blocks] pairs, fewest erases first (blocks not erased left out).
    #[serde(default)]
    pub erase_histogram: Vec<[u64; 2]>,
}

/// A what-if beside the baseline: the same trace changed, or another card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    /// What changed, as the flag says it (`coalesce 30 s`, `card sim:x`).
    pub what: String,
    pub waf: Option<f64>,
    pub flash_bytes_written: u64,
    pub years: Option<Quantiles>,
    /// Median years over the baseline's: 6.0 is "lasts 6x longer".
    pub ratio: Option<f64>,
    /// Why it could not be computed (a shift past the card's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The whole answer: the trace, the first card's life, what-ifs, and the
/// other cards in full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Life {
    pub trace: TraceSummary,
    #[serde(flatten)]
    pub baseline: CardLife,
    pub what_if: Vec<WhatIf>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_cards: Vec<CardLife>,
}

impl Life {
    /// The figures `results compare` and the report set beside another
    /// run's: the baseline card's.
    pub fn metrics(&self) -> Vec<crate::measure::metrics::Metric> {
        use crate::measure::metrics::{Better, MetricId, Unit, m};
        let b = &self.baseline;
        let mut out = Vec::new();
        if let Some(w) = b.waf {
            out.push(m(MetricId::Amplification, Unit::Ratio, Better::Lower, w));
        }
        if let Some(d) = b.per_day {
            out.push(m(MetricId::FlashBytesPerDay, Unit::Bytes, Better::Lower, d.flash_bytes));
        }
        if let Some(y) = b.years {
            out.push(m(MetricId::LifeYears, Unit::Years, Better::Higher, y.p50));
        }
        out
    }
}

/// A trace the replay can read from its start as often as it needs.
pub trait Source {
    type Error: From<LifeError>;
    /// Every record, in time order, into `sink`.
    fn pass(&mut self, sink: &mut dyn FnMut(&TraceRecord) -> Result<(), LifeError>) -> Result<(), Self::Error>;
}

/// What one card's replay needs beyond the card and the trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Replay {
    pub start: Start,
    /// `--pe`: the cycles the user knows; otherwise the cell type's prior.
    pub pe: Option<u64>,
}

/// Replay `source` on `card`, changed by `variant`.
pub fn card_life<S: Source>(
    spec: &str,
    card: SimTarget,
    source: &mut S,
    variant: &Variant,
    how: Replay,
) -> Result<CardLife, S::Error> {
    let mut pass = Pass::new(card, variant.clone());
    let mut passes = 0;
    let mut settled = how.start == Start::Fresh;
    if how.start == Start::Steady {
        source.pass(&mut |r| pass.survey(r))?;
        pass.fill()?;
    }
    let mut last: Option<f64> = None;
    let mut by_pass = Vec::new();
    loop {
        pass.begin();
        source.pass(&mut |r| pass.record(r))?;
        pass.end()?;
        passes += 1;
        let waf = pass.window_waf();
        by_pass.push(waf.unwrap_or(0.0));
        if how.start == Start::Fresh {
            break;
        }
        if let (Some(now), Some(before)) = (waf, last)
            && (now - before).abs() <= SETTLED * before
        {
            settled = true;
            break;
        }
        if waf.is_none() || passes >= MAX_PASSES {
            settled = waf.is_none();
            break;
        }
        last = waf;
    }
    let mut life = pass.finish(spec, how, passes, settled);
    life.waf_by_pass = by_pass;
    Ok(life)
}

#[cfg(test)]
mod tests;
