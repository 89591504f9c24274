//! The one progress display: a spinner with the elapsed time on stderr while
//! a test runs, a bar with an ETA once the test says how far it is (the
//! test's [`Progress`](crate::measure::Progress) sink), and a line when it
//! ends; only when stderr is a terminal (a script reading stderr sees only
//! notes and errors). Never on stdout, so nothing of it reaches `--json`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    what: String,
    started: Instant,
    /// A writing step's device-time budget: it ends by then, so the ETA
    /// shown is never past it.
    budget: Option<Duration>,
}

impl crate::measure::Progress for Progress {
    /// The first call turns the spinner into a bar with a percentage and
    /// an ETA (indicatif's, from the rate so far); without a terminal it
    /// does nothing.
    fn advance(&self, done: u64, total: u64) {
        let Some(b) = &self.bar else {
            return;
        };
        let total = total.max(1);
        if b.length() != Some(total) {
            let budget = self.budget;
            // indicatif's estimate from the rate so far, but no later than
            // the step's budget ends it: a sweep's later counts cost more
            // than its first, and a collapse ends it early.
            let left = move |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                // Too little done to go by (a warm-up, a journal being
                // read, a step's first test): "0s" would be a promise, and
                // rates from the first few percent were off by more than
                // twice (bench on a loop device: 53 s shown at 3%, 17 s
                // taken; from 10% on, within a factor of 2:
                // scripts/eta-check.sh).
                let enough = state.len().is_some_and(|n| state.pos() * 10 >= n);
                if !enough || state.elapsed() < Duration::from_secs(1) {
                    let _ = write!(w, "…");
                    return;
                }
                let eta = state.eta();
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
        b.set_position(done.min(total));
    }
}

impl Progress {
    /// A step's display; `budget_s`: a writing step's device-time budget.
    pub fn start(what: &str, budget_s: Option<f64>) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                b.set_style(style);
            }
            b.set_message(what.to_string());
            b.enable_steady_tick(Duration::from_millis(120));
            crate::console::stdio::set_spinner(Some(b.clone()));
            b
        });
        Progress {
            bar,
            what: what.to_string(),
            started: Instant::now(),
            budget: budget_s.map(Duration::from_secs_f64),
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

    /// Clear the display now, before a line that must not sit under a
    /// stale bar.
    pub fn clear(&self) {
        if let Some(b) = &self.bar {
            crate::console::stdio::set_spinner(None);
            b.finish_and_clear();
        }
    }

    /// Clear the spinner and, with `-v`, say the step ended: on a terminal
    /// always, and elsewhere when `announce` (probe's one line per step). A
    /// step that did not end "done:" ("failed:", "refused:" or
    /// "interrupted:") is always said.
    pub fn finish(self, ended: &str, device_s: f64, announce: bool) {
        let ok = ended == "done:";
        let shown = self.bar.is_some();
        if let Some(b) = self.bar {
            crate::console::stdio::set_spinner(None);
            b.finish_and_clear();
        }
        if (shown || announce) && (crate::console::stdio::verbose() || !ok) {
            // A step that ended before its result has no device time to
            // tell: "0.0 device-seconds" after 8 s of I/O read as a lie.
            let device = if ok || device_s > 0.0 {
                format!("{device_s:.1} device-seconds, ")
            } else {
                String::new()
            };
            crate::errln!(
                "{ended} {} ({device}{:.1} s here)",
                self.what,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}
