//! The one progress display: a spinner with the elapsed time on stderr while
//! a test runs, a bar with an ETA once the test says how far it is (the
//! test's [`Progress`](crate::measure::Progress) sink), and a line when it
//! ends; only when stderr is a terminal (a script reading stderr sees only
//! notes and errors). Never on stdout, so nothing of it reaches `--json`.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// Where a run shows its progress: alone on stderr's terminal (the bar
/// then comes and goes with each step), or as one line among several runs'
/// (`batch`: indicatif's MultiProgress, which its owner shows and clears),
/// each line named by its run. A run's own, not the process's: two runs at
/// once had drawn over each other's bar.
#[derive(Clone, Default)]
pub struct Display {
    among: Option<(MultiProgress, String)>,
    /// Under an overall line: where each step tells how far it is, in
    /// thousandths, for the line's ETA.
    told_above: Option<Arc<AtomicU64>>,
}

impl Display {
    /// One line of `multi`, its messages starting with `label`.
    pub fn among(multi: &MultiProgress, label: &str) -> Display {
        Display {
            among: Some((multi.clone(), label.to_string())),
            told_above: None,
        }
    }

    /// The run shares the terminal with other lines.
    pub fn is_shared(&self) -> bool {
        self.among.is_some()
    }

    /// One line of `multi` under a run's own overall line (probe's): the
    /// step's name alone, and how far it is told in `told_above`.
    pub fn under(multi: &MultiProgress, told_above: Arc<AtomicU64>) -> Display {
        Display {
            told_above: Some(told_above),
            ..Display::among(multi, "")
        }
    }
}

pub struct Progress {
    bar: Option<ProgressBar>,
    /// The bar is the terminal's only one (not a line of a MultiProgress):
    /// stderr lines go around it while it shows.
    alone: bool,
    /// The step as the bar names it: after its run's label among others.
    what: String,
    /// The step alone, for the line its end leaves: among others, every
    /// stderr line of the run already starts with the run's name
    /// ("loop0: failed: loop0: capacity" had named it twice).
    step: String,
    started: Instant,
    /// A writing step's device-time budget: it ends by then, so the ETA
    /// shown is never past it.
    budget: Option<Duration>,
    /// When the step first said how far it was, and how far: its rate is
    /// taken from then, not from its start, whose setup (a journal, a
    /// warm-up) advanced nothing.
    first: std::sync::OnceLock<(Instant, u64)>,
    /// A timed step's estimate of the wall time left, and when it was
    /// made.
    told: Arc<std::sync::Mutex<Option<(Instant, Duration)>>>,
    /// The overall line's share of how far this step is ([`Display::under`]).
    told_above: Option<Arc<AtomicU64>>,
}

impl crate::measure::Progress for Progress {
    /// The first call turns the spinner into a bar with a percentage and
    /// an ETA (from the rate since that call); without a terminal it does
    /// nothing.
    fn advance(&self, done: u64, total: u64) {
        let Some(b) = &self.bar else {
            return;
        };
        let total = total.max(1);
        self.first.get_or_init(|| (Instant::now(), done));
        self.as_bar(b, total);
        b.set_position(done.min(total));
        self.tell_above(b);
    }

    /// The bar in thousandths of the estimated whole, never back; the ETA
    /// is the estimate left, turned into wall time at the pace device time
    /// has gone since the first call (an emulation at a time scale, a
    /// host's own overhead), counting down between calls.
    fn timed(&self, spent_ns: u64, left_ns: u64) {
        let Some(b) = &self.bar else {
            return;
        };
        let (t0, s0) = *self.first.get_or_init(|| (Instant::now(), spent_ns));
        self.as_bar(b, PER_MILLE);
        let whole = spent_ns as f64 + left_ns as f64;
        let at = (PER_MILLE as f64 * spent_ns as f64 / whole.max(1.0)) as u64;
        b.set_position(at.max(b.position()).min(PER_MILLE));
        self.tell_above(b);
        let device = spent_ns.saturating_sub(s0);
        if device > 0 {
            let pace = t0.elapsed().as_secs_f64() / (device as f64 / 1e9);
            let left = Duration::try_from_secs_f64(left_ns as f64 / 1e9 * pace).unwrap_or(Duration::MAX);
            if let Ok(mut told) = self.told.lock() {
                *told = Some((Instant::now(), left));
            }
        }
    }
}

/// Thousandths: a timed step's bar length (its estimate), the share of its
/// step a bar tells the overall line, and that line's length.
pub(super) const PER_MILLE: u64 = 1000;

impl Progress {
    /// Tell the overall line, if any, how far the bar is.
    fn tell_above(&self, b: &ProgressBar) {
        if let Some(above) = &self.told_above {
            let len = b.length().unwrap_or(1).max(1);
            above.store(b.position().saturating_mul(PER_MILLE) / len, Ordering::Relaxed);
        }
    }

    /// Turn the spinner into a bar of `total` units, once: a percentage
    /// and the time left, either the step's own estimate (`timed`) or at
    /// its average rate so far, and never past its budget.
    fn as_bar(&self, b: &ProgressBar, total: u64) {
        if b.length() == Some(total) {
            return;
        }
        let budget = self.budget;
        let p0 = self.first.get().map_or(0, |f| f.1);
        let t0 = self.first.get().map_or_else(Instant::now, |f| f.0);
        let told = self.told.clone();
        // The time left at the step's average rate so far (or as the step
        // estimates it), but no later than the step's budget ends it: a
        // sweep's later counts cost more than its first, and a collapse
        // ends it early.
        let left = move |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            // Too little done to go by (a warm-up, a journal being read, a
            // step's first test): "0s" would be a promise, and rates from
            // the first few percent were off by more than twice (bench on a
            // loop device: 53 s shown at 3%, 17 s taken; from 10% on,
            // within a factor of 2: scripts/eta-check.sh).
            let (pos, len) = (state.pos(), state.len().unwrap_or(1));
            let told = told.lock().ok().and_then(|t| *t);
            let enough = pos * 10 >= len && (told.is_some() || pos > p0);
            if !enough || t0.elapsed() < Duration::from_secs(1) {
                let _ = write!(w, "…");
                return;
            }
            let eta = match told {
                Some((at, left)) => left.saturating_sub(at.elapsed()),
                None => at_this_rate(t0.elapsed(), pos.saturating_sub(p0), len.saturating_sub(pos)),
            };
            let cap = budget.map(|b| b.saturating_sub(state.elapsed()));
            let shown = cap.map_or(eta, |c| eta.min(c));
            let _ = write!(w, "{}", indicatif::HumanDuration(shown));
        };
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {msg} [{bar:24}] {percent:>3}% ETA {left} ({elapsed})")
        {
            b.set_style(style.progress_chars("=> ").with_key("left", left));
        }
        b.set_length(total);
    }
}

/// Time for `left` units at the rate of the `done` ones in `elapsed`.
/// Not indicatif's estimate, which weighs the last seconds most: on an
/// emulated card (`scripts/eta-check.sh`) capacity showed 37 s left at
/// 14% after 2 s, for a step of 7.6 s (5.2x).
fn at_this_rate(elapsed: Duration, done: u64, left: u64) -> Duration {
    if done == 0 {
        return Duration::MAX;
    }
    Duration::try_from_secs_f64(elapsed.as_secs_f64() * left as f64 / done as f64).unwrap_or(Duration::MAX)
}

impl Progress {
    /// A step's display in `display`; `budget_s`: a writing step's
    /// device-time budget.
    pub fn start(display: &Display, what: &str, budget_s: Option<f64>) -> Self {
        let step = what.to_string();
        let what = match &display.among {
            Some((_, label)) if !label.is_empty() => format!("{label}: {what}"),
            _ => what.to_string(),
        };
        let alone = display.among.is_none();
        let bar = (!alone || std::io::stderr().is_terminal()).then(|| {
            let b = match &display.among {
                Some((multi, _)) => multi.add(ProgressBar::new_spinner()),
                None => ProgressBar::new_spinner(),
            };
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                b.set_style(style);
            }
            b.set_message(what.clone());
            b.enable_steady_tick(Duration::from_millis(120));
            if alone {
                crate::console::stdio::set_spinner(Some(crate::console::stdio::Shown::Bar(b.clone())));
            }
            b
        });
        Progress {
            bar,
            alone,
            what,
            step,
            started: Instant::now(),
            budget: budget_s.map(Duration::from_secs_f64),
            first: std::sync::OnceLock::new(),
            told: Default::default(),
            told_above: display.told_above.clone(),
        }
    }

    /// The test was interrupted: the bar stops where it was and says what
    /// happens now (the restore takes a while on a slow card; a user saw
    /// the bar go on for two seconds after Ctrl-C).
    pub fn interrupted(&self) {
        if let Some(b) = &self.bar {
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                b.set_style(style);
            }
            b.set_message(format!("{}: interrupted; writing the original data back", self.what));
        }
    }

    /// Say what the step has seen so far, after its name (a capture's
    /// live counts).
    pub fn say(&self, text: &str) {
        if let Some(b) = &self.bar {
            b.set_message(format!("{}: {text}", self.what));
        }
    }

    /// Show `text` alone after the spinner, cut to the terminal's width
    /// (`emulate`'s live counters: one line redrawn in place, never
    /// wrapped onto a second).
    pub fn live(&self, text: &str) {
        if let Some(b) = &self.bar {
            if let Ok(style) = ProgressStyle::with_template("{spinner} {wide_msg}") {
                b.set_style(style);
            }
            b.set_message(text.to_string());
        }
    }

    /// Clear the display now, before a line that must not sit under a
    /// stale bar.
    pub fn clear(&self) {
        if let Some(b) = &self.bar {
            if self.alone {
                crate::console::stdio::set_spinner(None);
            }
            b.finish_and_clear();
        }
    }

    /// Clear the spinner and, with `-v`, say the step ended: on a terminal
    /// always, and elsewhere when `announce` (probe's one line per step). A
    /// step that did not end "done:" ("failed:", "refused:" or
    /// "interrupted:") is always said, except a refusal before any I/O:
    /// the error that follows says why ("refused: bench (0.0 s here)" had
    /// opened a run that never began).
    pub fn finish(self, ended: &str, device_s: f64, announce: bool) {
        let ok = ended == "done:";
        let unbegun = ended == "refused:" && device_s == 0.0;
        let shown = self.bar.is_some();
        if let Some(b) = self.bar {
            if self.alone {
                crate::console::stdio::set_spinner(None);
            }
            b.finish_and_clear();
        }
        if (shown || announce) && (crate::console::stdio::verbose() || !ok) && !unbegun {
            // A step that ended before its result has no device time to
            // tell: "0.0 device-seconds" after 8 s of I/O read as a lie.
            let device = if ok || device_s > 0.0 {
                format!("{device_s:.1} device-seconds, ")
            } else {
                String::new()
            };
            crate::errln!(
                "{ended} {} ({device}{:.1} s here)",
                self.step,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run among others draws its own line, named, in the shared
    /// display, and leaves the terminal's single bar alone; a run alone
    /// draws only on a terminal.
    #[test]
    fn the_time_left_is_at_the_average_rate() {
        let ten = Duration::from_secs(10);
        assert_eq!(at_this_rate(ten, 25, 75), Duration::from_secs(30));
        assert_eq!(at_this_rate(ten, 100, 0), Duration::ZERO);
        assert_eq!(at_this_rate(ten, 0, 100), Duration::MAX);
        assert_eq!(at_this_rate(ten, 1, u64::MAX), Duration::MAX);
    }

    #[test]
    fn each_run_among_several_has_its_own_named_line() {
        let multi = MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden());
        let a = Progress::start(&Display::among(&multi, "slot 1"), "align", None);
        let b = Progress::start(&Display::among(&multi, "slot 2"), "open-au", Some(60.0));
        let (ba, bb) = (a.bar.clone().unwrap(), b.bar.clone().unwrap());
        assert_eq!(ba.message(), "slot 1: align");
        assert_eq!(bb.message(), "slot 2: open-au");
        crate::measure::Progress::advance(&b, 3, 10);
        assert_eq!((bb.position(), bb.length(), ba.length()), (3, Some(10), None));
        assert!(!a.alone && !b.alone);
        a.finish("done:", 1.0, false);
        assert!(ba.is_finished() && !bb.is_finished());
        b.finish("done:", 1.0, false);
        let alone = Progress::start(&Display::default(), "align", None);
        assert!(alone.alone);
        assert_eq!(alone.bar.is_some(), std::io::stderr().is_terminal());
        alone.clear();
    }
}
