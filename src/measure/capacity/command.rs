//! `flashlab capacity`: its arguments and its steps: a survey of the whole
//! card, then stages that narrow the window where its real size lies, each
//! a preserving run of its own; the verdict from all of them.

use super::{CapacityResult, DEFAULT_FLUSH, DEFAULT_PUSH, Next, Options, Stage, THOROUGH_FLUSH, next, verdict};
use crate::measure::registry::Session;
use crate::measure::registry::Steps;
use crate::targets::TargetDescription;
use crate::units::Iec;

/// Is the card as large as it says? Position-tagged blocks sampled across
/// the whole announced size, a cache push, then a bisection to the last
/// good byte: genuine, fake (addresses wrap, writes lost, or kept only by
/// a cache; with the usable size) or damaged. Writes, preserved unless
/// --no-preserve; the first MiB is never written.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab capacity /dev/sdb --write          is this 64 GB stick real?
  flashlab capacity sim:demo,capacity=64G,real_capacity=8G,fake_mode=wrap")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
    /// Bytes at the start never written (default 1M: the partition
    /// table and boot sectors).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size, default_value = "1M")]
    pub skip: u64,
    /// Bytes written after the samples to push them out of any write
    /// cache; also the spacing of the read probes that see wrap-around
    /// (default 32M, less on a target too small for it).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size)]
    pub push: Option<u64>,
    /// Write 1 GiB after the samples instead of 72 MiB, so that a write
    /// cache of up to 1 GiB cannot hide lost writes (the extra is written
    /// with the bytes already there: more time, nothing more to restore).
    #[arg(long)]
    pub thorough: bool,
    #[command(flatten)]
    pub write: crate::args::WriteArgs,
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        let push = self.push.unwrap_or_else(|| default_push(s.description(), self.skip));
        let flush = if self.thorough { THOROUGH_FLUSH } else { DEFAULT_FLUSH };
        let found = steps(s, Options::new(self.skip, push, flush.max(push), s.nonce()))?;
        s.update(|r| r.capacity.set(found));
        Ok(())
    }
}

/// Why capacity does not run on a simulated card that keeps timing alone:
/// every block would read back lost, and it would call the card a fake
/// with nothing usable, a verdict about the spec, not a measurement.
pub fn keeps_no_data(d: &TargetDescription) -> crate::measure::MeasureError {
    crate::measure::MeasureError::Bad {
        why: format!(
            "{} keeps no data (keep_data=false: timing only), so capacity cannot read back what it writes",
            d.spec
        ),
        fix: "give the simulated card keep_data=true".into(),
    }
}

/// The survey's flush may take this share of the step's budget (half: the
/// rest is for the samples, the read probes and the narrowing stages).
const FLUSH_SHARE: u64 = 2;

/// The push unless the user gave one: 32 MiB, or on a small target at most
/// half of what lies past the untouched start.
pub fn default_push(d: &TargetDescription, skip: u64) -> u64 {
    let block = u64::from(d.logical_block_size.max(1));
    DEFAULT_PUSH.min(d.size_bytes.saturating_sub(skip) / 2 / block * block)
}

/// The stages, each narrowing the window, then the verdict. A narrowing
/// stage starts only within the budget (`--budget`, default
/// [`STEP_BUDGET_S`](crate::measure::STEP_BUDGET_S)): past it the verdict
/// stands with the window where the real size lies, unsure of the size.
pub fn steps<S: Session>(s: &mut S, mut options: Options) -> Result<CapacityResult, S::Error> {
    let d = s.description().clone();
    if !s.keeps_data() {
        return Err(keeps_no_data(&d).into());
    }
    // As asked: the verdict's limits name --thorough unless it was given.
    let asked = options;
    let mut stages = Vec::new();
    let mut window = None;
    let started = s.device_ns();
    let budget = s.budget_ns();
    loop {
        let flush = window.is_none() || super::cache_seen(&stages);
        let canary = window.and_then(|w| {
            super::canary_for(
                &stages,
                &options,
                w,
                d.size_bytes,
                u64::from(d.logical_block_size.max(1)),
            )
        });
        let lap = super::lap(&stages);
        stages.push(s.run(&Stage {
            options,
            window,
            flush,
            canary,
            lap,
            // --thorough asked for the whole flush, whatever it takes.
            flush_budget_ns: if options.flush >= super::THOROUGH_FLUSH {
                u64::MAX
            } else {
                budget / FLUSH_SHARE
            },
        })?);
        if window.is_none() {
            // Later stages flush what the survey showed evicts a cache.
            options.flush = stages[0].flushed.max(options.push);
        }
        match next(&stages, d.size_bytes) {
            Next::Done => break,
            Next::Narrow(lo, hi) if s.device_ns().saturating_sub(started) >= budget => {
                let spent = s.device_ns().saturating_sub(started) as f64 / 1e9;
                let mut v = verdict(&stages, &d, &asked);
                v.limits.push(format!(
                    "unsure of the real size: stopped after {spent:.0} device-seconds (the step's budget) with it \
                     between byte {lo} and byte {hi}; --budget SECONDS gives it more time"
                ));
                return Ok(v);
            }
            Next::Reads(lo, hi) => {
                crate::errln!(
                    "capacity: the card refuses reads from somewhere between byte {lo} and byte {hi}; finding \
                     where by reads"
                );
                stages.push(s.run(&super::Boundary { lo, hi })?);
                match next(&stages, d.size_bytes) {
                    Next::Narrow(lo, hi) => window = Some((lo, hi)),
                    Next::Done | Next::Reads(..) => break,
                }
            }
            Next::Narrow(lo, hi) => {
                crate::errln!(
                    "capacity: the real size lies between byte {lo} and byte {hi} ({} apart); narrowing",
                    Iec(hi - lo)
                );
                window = Some((lo, hi));
            }
        }
    }
    Ok(verdict(&stages, &d, &asked))
}
