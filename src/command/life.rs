//! `flashlab life TRACE --card SPEC...`: the trace counted once, then
//! replayed on each card, and on the first card again for each what-if;
//! the answer stored as a run.

use std::path::PathBuf;

use super::life_card::Model;
use crate::args::Card;
use crate::document::device::DeviceId;
use crate::document::{CommandName, RunDocument};
use crate::error::{CliError, CliResult};
use crate::import::trace::{Trace, TraceError, TraceOptions};
use crate::measure::life::{self, CardLife, Life, LifeError, Replay, Source, TraceSummary, Variant, WhatIf};
use crate::sim::SimTarget;
use crate::sim::replay::{ReplayError, TraceRecord};

/// What `life` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// The trace, how it is read (which events are the device's), and the
    /// bytes added to every offset: the partition's start.
    pub trace: PathBuf,
    pub read: TraceOptions,
    pub offset: u64,
    /// The cards, and how each replays the trace.
    pub cards: Vec<Card>,
    pub replay: Replay,
    /// The what-ifs, on the first card.
    pub coalesce_ns: Option<u64>,
    pub shift: Option<u64>,
    pub no_discard: bool,
    /// Where `--card RUN_ID` reads the run from.
    pub runs: Option<PathBuf>,
    /// The results store the answer is saved in (None: --no-store).
    pub store: Option<PathBuf>,
    /// The user named it (`Places::store_named_by`).
    pub store_named: bool,
}

impl From<TraceError> for CliError {
    fn from(e: TraceError) -> Self {
        let hint = e.hint();
        CliError::usage(e.to_string()).hint(hint)
    }
}

impl From<LifeError> for CliError {
    fn from(e: LifeError) -> Self {
        match e {
            LifeError::Card(ReplayError::PastEnd { offset, len, size }) => CliError::usage(format!(
                "the trace asks for {len} bytes at byte {offset}, past the card's end at {size} bytes"
            ))
            .hint(
                "give a card at least as large as the traced device (`--card sim:PROFILE,capacity=SIZE`), \
                 or check --offset and --shift",
            ),
            LifeError::Card(e @ ReplayError::PastClock { .. }) => CliError::usage(e.to_string()).hint(
                "the card is too slow for this trace: check its clock_hz, page and copy times, or replay \
                 part of the trace",
            ),
        }
    }
}

/// The trace file, read from its start at every pass, its offsets moved
/// by the partition's start.
struct TraceFile<'a> {
    path: &'a std::path::Path,
    opts: TraceOptions,
    offset: u64,
}

impl TraceFile<'_> {
    /// An offset that overflows stays past any card's end, where the
    /// replay refuses it.
    fn moved(&self, r: TraceRecord) -> TraceRecord {
        TraceRecord {
            offset: r.offset.saturating_add(self.offset),
            ..r
        }
    }

    /// Count the trace once: what `life.trace` says.
    fn summary(&self) -> CliResult<TraceSummary> {
        let mut t = Trace::open(self.path, self.opts)?;
        let mut s = TraceSummary {
            format: t.format().to_string(),
            ..TraceSummary::default()
        };
        let mut first = None;
        while let Some(r) = t.next_record()? {
            let r = self.moved(r);
            s.add(&r, *first.get_or_insert(r.time_ns));
        }
        s.truncated = t.truncated();
        s.times_back = t.went_back();
        s.left_out = t.left_out();
        Ok(s)
    }
}

impl Source for TraceFile<'_> {
    type Error = CliError;

    fn pass(&mut self, sink: &mut dyn FnMut(&TraceRecord) -> Result<(), LifeError>) -> Result<(), CliError> {
        let mut t = Trace::open(self.path, self.opts)?;
        while let Some(r) = t.next_record()? {
            sink(&self.moved(r))?;
        }
        Ok(())
    }
}

pub fn run(o: &Options) -> CliResult<RunDocument> {
    let mut source = TraceFile {
        path: &o.trace,
        opts: o.read,
        offset: o.offset,
    };
    let trace = source.summary()?;
    if trace.requests == 0 {
        return Err(
            CliError::usage(format!("{}: the trace holds no requests", o.trace.display()))
                .hint("with blktrace, D events are read (--events q for Q); a capture of an idle device holds none"),
        );
    }
    let one = |card: &Model, source: &mut TraceFile<'_>, variant: &Variant| -> CliResult<CardLife> {
        life::card_life(
            &card.0,
            SimTarget::new(&card.0, card.1.clone()),
            source,
            variant,
            o.replay,
        )
    };
    let mut models = Vec::new();
    for c in &o.cards {
        models.extend(super::life_card::models(c, o.runs.as_deref())?);
    }
    let Some((first, others)) = models.split_first() else {
        return Err(CliError::usage("life needs a card to replay the trace on")
            .hint("give --card sim:PROFILE (`flashlab sim list` names them)"));
    };
    // A what-if that moves the partition's start past the card's end is
    // no what-if: refused before any replay.
    if let Some(shift) = o.shift.filter(|&s| s >= first.1.capacity) {
        return Err(CliError::usage(format!(
            "--shift {} moves the partition past the card's end ({})",
            crate::units::Iec(shift),
            crate::units::Iec(first.1.capacity)
        ))
        .hint("give --shift a few MiB: how far to move the partition's start, as an AU's worth would"));
    }
    let baseline = one(first, &mut source, &Variant::default())?;
    let mut what_if = Vec::new();
    let mut variants = Vec::new();
    if let Some(ns) = o.coalesce_ns {
        let what = format!("coalesce {}", crate::units::duration_ns(ns as f64));
        variants.push((
            what,
            Variant {
                coalesce_ns: Some(ns),
                ..Variant::default()
            },
        ));
    }
    if let Some(bytes) = o.shift {
        variants.push((
            format!("shift {}", crate::units::Iec(bytes)),
            Variant {
                shift: bytes,
                ..Variant::default()
            },
        ));
    }
    if o.no_discard {
        variants.push((
            "no discard".into(),
            Variant {
                discard: false,
                ..Variant::default()
            },
        ));
    }
    for (what, variant) in variants {
        what_if.push(match one(first, &mut source, &variant) {
            Ok(l) => compared(what, &l, &baseline),
            // A what-if the card cannot take is a line that says so, not a
            // failed run.
            Err(e) => WhatIf {
                what,
                waf: None,
                flash_bytes_written: 0,
                years: None,
                ratio: None,
                error: Some(e.message),
            },
        });
    }
    let mut other_cards = Vec::new();
    for card in others {
        let l = one(card, &mut source, &Variant::default())?;
        what_if.push(compared(format!("card {}", l.card), &l, &baseline));
        other_cards.push(l);
    }
    let mut doc = RunDocument::new(CommandName::Life, None);
    doc.extras.device.set(DeviceId {
        key: format!("life:{}", baseline.card),
        name: format!("{} under {}", baseline.card, o.trace.display()),
    });
    doc.extras.life.set(Life {
        trace,
        baseline,
        what_if,
        other_cards,
    });
    crate::runner::finish_and_save(&mut doc, o.store.as_deref(), o.store_named);
    Ok(doc)
}

/// A what-if's line: its figures and its median life over the baseline's.
fn compared(what: String, l: &CardLife, baseline: &CardLife) -> WhatIf {
    let ratio = match (&l.years, &baseline.years) {
        (Some(y), Some(b)) if b.p50 > 0.0 => Some(y.p50 / b.p50),
        _ => None,
    };
    WhatIf {
        what,
        waf: l.waf,
        flash_bytes_written: l.flash_bytes_written,
        years: l.years,
        ratio,
        error: None,
    }
}
