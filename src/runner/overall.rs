//! probe's line over its steps' own: how far the whole run is and when it
//! ends, never later than what its budget leaves. Only on stderr's
//! terminal, as every bar.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use super::progress::PER_MILLE;

/// probe's steps in order, each weighed by its median device time on the
/// generator's hard family (`cargo run --release --example budget -- 100 1
/// 2 3`, 300 cards; seconds): what a step usually costs against the others,
/// so the line moves as the run's time goes, not as its step count; and
/// whether it writes (the reading steps come first, and their pace says
/// nothing of the writing steps': align read for 7 s on an emulated card
/// whose writing steps then went twice as fast as that pace foretold).
pub const PROBE_STEPS: [(&str, f64, bool); 8] = [
    ("align", 6.3, false),
    ("scatter", 0.9, false),
    ("au", 59.3, true),
    ("page", 0.7, true),
    ("open-au", 40.3, true),
    ("fat", 22.2, true),
    ("capacity", 37.2, true),
    ("bench", 57.5, true),
];

/// Where the run is: each step's weight and whether it ended (or will not
/// run), and the device time of the run so far.
struct Steps {
    plan: Vec<Planned>,
    /// The step running, by its place in `plan`, and since when.
    current: Option<usize>,
    since: std::time::Instant,
    /// Wall seconds the writing steps that ended took.
    writing_s: f64,
    /// The run's device seconds when the last step ended.
    device_s: f64,
    /// Device seconds the whole run may take, and those its steps may
    /// each take where the user gave a step budget.
    budget: Budget,
}

/// A step of the plan: its name, its weight and where it is.
struct Planned {
    name: String,
    weight: f64,
    writes: bool,
    state: State,
    /// Wall seconds of it counted in `Steps::writing_s`: a step run in
    /// stages (capacity) ends once per stage.
    counted: f64,
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    ToRun,
    Ran,
    /// It will not run: its weight leaves the whole, and the pace of the
    /// steps that ran is not diluted by it.
    Skipped,
}

/// What bounds the run's time.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// probe's own: shared among its steps (`PROBE_BUDGET_S`).
    Whole(f64),
    /// `--budget`: each step's.
    EachStep(f64),
}

impl Steps {
    /// The weight done, the running step's share counted at `running`
    /// (its thousandths), and the whole.
    fn weights(&self, running: u64) -> (f64, f64) {
        let of = |keep: &dyn Fn(State) -> bool| self.plan.iter().filter(|p| keep(p.state)).map(|p| p.weight).sum();
        let total: f64 = of(&|s| s != State::Skipped);
        let done: f64 = of(&|s| s == State::Ran);
        (
            done + self.running_weight() * running.min(PER_MILLE) as f64 / PER_MILLE as f64,
            total,
        )
    }

    /// The step running, if it has not ended.
    fn running(&self) -> Option<&Planned> {
        let step = self.current.and_then(|i| self.plan.get(i));
        step.filter(|p| p.state == State::ToRun)
    }

    fn running_weight(&self) -> f64 {
        self.running().map_or(0.0, |p| p.weight)
    }

    /// The writing steps' weight that ran, and all of it that will.
    fn writing(&self) -> (f64, f64) {
        let w = self.plan.iter().filter(|p| p.writes);
        let ran = w.clone().filter(|p| p.state == State::Ran).map(|p| p.weight).sum();
        (ran, w.filter(|p| p.state != State::Skipped).map(|p| p.weight).sum())
    }

    /// Device seconds the run may still take.
    fn budget_left_s(&self) -> f64 {
        match self.budget {
            Budget::Whole(s) => (s - self.device_s).max(0.0),
            Budget::EachStep(s) => s * self.plan.iter().filter(|p| p.state == State::ToRun).count() as f64,
        }
    }
}

pub struct Overall {
    multi: MultiProgress,
    bar: ProgressBar,
    steps: Arc<Mutex<Steps>>,
    /// How far the running step's own bar is, in thousandths.
    running: Arc<AtomicU64>,
    /// The farthest the line was drawn, in thousandths (the drawing holds
    /// its own handle; this one is the tests').
    #[cfg_attr(not(test), allow(dead_code))]
    shown: Arc<AtomicU64>,
}

impl Overall {
    /// The line over `plan`'s steps, with the steps' own bars under it in
    /// the returned display; None without a terminal on stderr.
    pub fn start(plan: &[(&str, f64, bool)], budget: Budget) -> Option<(Overall, super::progress::Display)> {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let multi = MultiProgress::new();
        let overall = Overall::in_multi(multi, plan, budget);
        crate::console::stdio::set_spinner(Some(crate::console::stdio::Shown::Many(overall.multi.clone())));
        let display = super::progress::Display::under(&overall.multi, overall.running.clone());
        Some((overall, display))
    }

    fn in_multi(multi: MultiProgress, plan: &[(&str, f64, bool)], budget: Budget) -> Overall {
        let steps = Arc::new(Mutex::new(Steps {
            plan: plan
                .iter()
                .map(|&(name, weight, writes)| Planned {
                    name: name.to_string(),
                    weight,
                    writes,
                    state: State::ToRun,
                    counted: 0.0,
                })
                .collect(),
            current: None,
            since: std::time::Instant::now(),
            writing_s: 0.0,
            device_s: 0.0,
            budget,
        }));
        let bar = multi.add(ProgressBar::new_spinner());
        let running = Arc::new(AtomicU64::new(0));
        let (seen, far) = (steps.clone(), running.clone());
        let left = move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let Ok(s) = seen.lock() else {
                return;
            };
            let _ = write!(w, "{}", eta_text(&s, far.load(Ordering::Relaxed), s.since.elapsed()));
        };
        // The bar and percentage drawn from the weights with the running
        // step's share, so the line moves while a step runs; never back.
        let shown = Arc::new(AtomicU64::new(0));
        let (seen, far, drawn) = (steps.clone(), running.clone(), shown.clone());
        let whole = move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let Ok(s) = seen.lock() else {
                return;
            };
            let _ = write!(w, "{}", bar_text(forward(&s, far.load(Ordering::Relaxed), &drawn)));
        };
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {whole} {left} ({elapsed})") {
            bar.set_style(style.with_key("whole", whole).with_key("left", left));
        }
        bar.set_message("probe");
        bar.enable_steady_tick(Duration::from_millis(120));
        Overall {
            multi,
            bar,
            steps,
            running,
            shown,
        }
    }

    /// A step begins (again, for a step run in stages: capacity).
    pub fn begin(&self, step: &str) {
        // The bar's own drawing locks the steps (its ETA): never touch the
        // bar while they are locked.
        let (k, n) = {
            let Ok(mut s) = self.steps.lock() else {
                return;
            };
            let at = s.plan.iter().position(|p| p.name == step);
            if at != s.current {
                self.running.store(0, Ordering::Relaxed);
                s.since = std::time::Instant::now();
            }
            s.current = at;
            (at.map_or(0, |i| i + 1), s.plan.len())
        };
        self.bar.set_message(format!("probe {k}/{n} {step}"));
    }

    /// A step ended, the run at `device_s` device seconds.
    pub fn end(&self, step: &str, device_s: f64) {
        self.ended(&[step], State::Ran, Some(device_s));
    }

    /// Steps that will not run.
    pub fn skip(&self, steps: &[&str]) {
        self.ended(steps, State::Skipped, None);
    }

    fn ended(&self, steps: &[&str], now: State, device_s: Option<f64>) {
        let Ok(mut s) = self.steps.lock() else {
            return;
        };
        // Since the step first began: its stages' time all told.
        let took = s.since.elapsed().as_secs_f64();
        let mut more = 0.0;
        for p in s.plan.iter_mut().filter(|p| steps.contains(&p.name.as_str())) {
            if now == State::Ran && p.writes {
                more += took - p.counted;
                p.counted = took;
            }
            p.state = now;
        }
        s.writing_s += more;
        if let Some(d) = device_s {
            s.device_s = d;
        }
    }

    /// Where the line is, in thousandths.
    #[cfg(test)]
    fn at(&self) -> u64 {
        let s = self.steps.lock().unwrap();
        forward(&s, self.running.load(Ordering::Relaxed), &self.shown)
    }
}

/// The line goes with its run, however the run ends, and stderr lines stop
/// going around it.
impl Drop for Overall {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
        let _ = self.multi.clear();
        crate::console::stdio::set_spinner(None);
    }
}

/// Where the line is, in thousandths of the weight, the running step's
/// share by `running`; never behind `shown`, the farthest drawn (a step
/// ends its weight or takes it out of the whole, and a bar estimating in
/// device time can move its share back).
fn forward(s: &Steps, running: u64, shown: &AtomicU64) -> u64 {
    let (done, total) = s.weights(running);
    let now = (PER_MILLE as f64 * done / total.max(f64::MIN_POSITIVE)).min(PER_MILLE as f64) as u64;
    shown.fetch_max(now, Ordering::Relaxed).max(now)
}

/// "[=========>          ]  48%": `at` thousandths as a bar of 20.
fn bar_text(at: u64) -> String {
    const WIDTH: u64 = 20;
    let full = (at.min(PER_MILLE) * WIDTH / PER_MILLE) as usize;
    let head = usize::from(full < WIDTH as usize);
    let rest = WIDTH as usize - full - head;
    format!(
        "[{}{}{}] {:>3}%",
        "=".repeat(full),
        ">".repeat(head),
        " ".repeat(rest),
        at / 10
    )
}

/// "ETA 1m, budget 9m", `in_step` into the running step, whose bar is at
/// `running` thousandths: the running step's time left at its own rate (as
/// its bar's ETA; by its weight until it is a tenth done), then the writing
/// steps to come at the pace of the writing done so far, by their weights;
/// never past what the budget leaves, and the budget alone until a tenth of
/// the writing weight is done. Device time is taken as wall time: probe's
/// steps are timed by the device, and a slow host adds to both.
fn eta_text(s: &Steps, running: u64, in_step: Duration) -> String {
    let bound = Duration::from_secs_f64(s.budget_left_s());
    let budget = format!("budget {}", short(bound));
    let (ran, total) = s.writing();
    let writing = s.running().filter(|p| p.writes).map_or(0.0, |p| p.weight);
    let f = running.min(PER_MILLE) as f64 / PER_MILLE as f64;
    let done = ran + writing * f;
    let spent = s.writing_s + if writing > 0.0 { in_step.as_secs_f64() } else { 0.0 };
    if total <= 0.0 || done * 10.0 < total || spent < 1.0 {
        return format!("ETA …, {budget}");
    }
    let pace = spent / done;
    let here = if f >= 0.1 {
        in_step.as_secs_f64() * (1.0 - f) / f
    } else {
        (writing * pace - in_step.as_secs_f64()).max(0.0)
    };
    let later = (total - ran - writing).max(0.0) * pace;
    let eta = Duration::try_from_secs_f64(here + later)
        .unwrap_or(Duration::MAX)
        .min(bound);
    format!("ETA {}, {budget}", short(eta))
}

/// "41s", "95s", "3m", "1h5m": a duration in one short word.
fn short(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    // Seconds up to 99: a minute rounded up from 61 s had shown twice the
    // time.
    match s {
        0..100 => format!("{s}s"),
        100..3600 => format!("{}m", (s + 30) / 60),
        _ => format!("{}h{}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line moves with the steps' weights, only forward, and its ETA
    /// is never past what the budget leaves.
    #[test]
    fn the_line_moves_by_weight_and_keeps_within_the_budget() {
        let multi = MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden());
        let o = Overall::in_multi(multi, &PROBE_STEPS, Budget::Whole(570.0));
        o.begin("align");
        assert_eq!(o.bar.message(), "probe 1/8 align");
        o.end("align", 6.3);
        o.end("scatter", 7.2);
        // 7.2 of 224.4 weighed seconds.
        assert_eq!(o.at(), 32);
        o.skip(&["au", "page"]);
        // 7.2 of 164.4: the line only goes forward.
        assert_eq!(o.at(), 43);
        let (fifteen, zero) = (Duration::from_secs(15), Duration::ZERO);
        // No writing step has run: no pace to go by.
        assert_eq!(eta_text(&o.steps.lock().unwrap(), 0, fifteen), "ETA …, budget 9m");
        // open-au half done by its own bar after 15 s: 15 s more for it, and
        // the 116.9 weighed seconds to come at its pace (15 s for 20.15).
        o.begin("open-au");
        assert_eq!(o.bar.message(), "probe 5/8 open-au");
        let s = o.steps.lock().unwrap();
        assert_eq!(s.budget_left_s(), 570.0 - 7.2);
        assert_eq!(eta_text(&s, 500, fifteen), "ETA 2m, budget 9m");
        // A tenth of the writing weight is not yet done.
        assert_eq!(eta_text(&s, 300, fifteen), "ETA …, budget 9m");
        // Never past the budget.
        assert_eq!(eta_text(&s, 500, Duration::from_secs(900)), "ETA 9m, budget 9m");
        drop(s);
        // The line moves with the running step's bar: 7.2 + 20.15 of
        // 164.4, and not back when that bar's share shrinks.
        o.running.store(500, Ordering::Relaxed);
        assert_eq!(o.at(), 166);
        o.running.store(100, Ordering::Relaxed);
        assert_eq!(o.at(), 166);
        o.end("open-au", 40.0);
        o.end("fat", 60.0);
        // The writing so far took 56 s for 62.5 weighed; capacity half
        // done after 4 s: 4 s more, and bench's 57.5 at the pace of the
        // 81.1 done in 60 s: 42.5 s.
        o.steps.lock().unwrap().writing_s = 56.0;
        o.begin("capacity");
        let s = o.steps.lock().unwrap();
        let four = Duration::from_secs(4);
        assert_eq!(eta_text(&s, 500, four), "ETA 47s, budget 9m");
        // Under a tenth done: capacity by its weight at that pace, 34.7 s,
        // of which 4 are gone, then bench's 53.6 s.
        assert_eq!(eta_text(&s, 50, four), "ETA 84s, budget 9m");
        assert_eq!(eta_text(&s, 50, zero), "ETA 82s, budget 9m");
        drop(s);
        let each = Overall::in_multi(
            MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden()),
            &PROBE_STEPS,
            Budget::EachStep(30.0),
        );
        each.end("align", 1.0);
        assert_eq!(each.steps.lock().unwrap().budget_left_s(), 7.0 * 30.0);
        let shown = eta_text(&each.steps.lock().unwrap(), 0, Duration::from_secs(5));
        assert_eq!(shown, "ETA …, budget 4m");
        assert_eq!(short(Duration::from_secs(3700)), "1h1m");
        assert_eq!(short(Duration::from_secs(99)), "99s");
        assert_eq!(short(Duration::from_secs(150)), "3m");
        assert_eq!(bar_text(480), "[=========>          ]  48%");
        assert_eq!(bar_text(1000), "[====================] 100%");
        assert_eq!(bar_text(0), "[>                   ]   0%");
    }
}
