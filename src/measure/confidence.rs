//! Scoring characterisations of generated cards against their truth: exact
//! rates per verdict and the calibration of confidence (docs/DESIGN.md, "Verdicts and confidence": of the
//! verdicts given with confidence at least 0.9, at least 90% right, and so
//! on down the scale). Used by the property tests and `examples/calibration.rs`.

use crate::measure::Results;
use crate::sim::generate::Truth;

/// Confidence buckets: [0, 0.5), [0.5, 0.7), [0.7, 0.9), [0.9, 1].
pub const BUCKETS: [f64; 4] = [0.0, 0.5, 0.7, 0.9];

/// One verdict's tally.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub right: usize,
    pub total: usize,
    /// (right, total) per confidence bucket.
    pub buckets: [(usize, usize); 4],
}

impl Tally {
    pub fn add(&mut self, right: bool, confidence: f64) {
        self.total += 1;
        self.right += usize::from(right);
        let b = BUCKETS.iter().rposition(|&lo| confidence >= lo).unwrap_or(0);
        self.buckets[b].1 += 1;
        self.buckets[b].0 += usize::from(right);
    }

    pub fn rate(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.right as f64 / self.total as f64
        }
    }

    /// Share of all verdicts that were wrong and given with confidence >= 0.9.
    pub fn confident_wrong(&self) -> f64 {
        let (r, t) = self.buckets[3];
        if self.total == 0 {
            0.0
        } else {
            (t - r) as f64 / self.total as f64
        }
    }

    /// Buckets whose accuracy is below their lower bound (with at least 10
    /// verdicts in them): a confidence that claims more than it delivers.
    pub fn overconfident(&self) -> Vec<String> {
        (1..4)
            .filter(|&b| self.buckets[b].1 >= 10)
            .filter(|&b| (self.buckets[b].0 as f64) < BUCKETS[b] * self.buckets[b].1 as f64)
            .map(|b| {
                format!(
                    "confidence >= {}: {}/{} right",
                    BUCKETS[b], self.buckets[b].0, self.buckets[b].1
                )
            })
            .collect()
    }

    pub fn show(&self) -> String {
        let b: Vec<String> = self
            .buckets
            .iter()
            .zip(BUCKETS)
            .map(|((r, t), lo)| format!(">={lo}: {r}/{t}"))
            .collect();
        format!(
            "{:.1}% exact ({}/{}); {}",
            100.0 * self.rate(),
            self.right,
            self.total,
            b.join(", ")
        )
    }
}

#[derive(Debug, Default, Clone)]
pub struct Score {
    pub au: Tally,
    pub page: Tally,
    pub linear: Tally,
    pub random: Tally,
    pub fat: Tally,
}

impl Score {
    /// Score one probe document against the card's truth. The page is
    /// scored only where it is at least twice the read block (a smaller page
    /// sits inside every read and cannot show).
    pub fn add(&mut self, results: &Results, truth: &Truth) -> Vec<String> {
        let mut wrong = Vec::new();
        let Some(a) = results.align.get() else {
            wrong.push("no align result".into());
            return wrong;
        };
        let (got, conf) = crate::measure::best_erase(a, results.au.get());
        let ok = got == Some(truth.au);
        self.au.add(ok, conf);
        if !ok {
            wrong.push(format!("AU {got:?} ({conf:.2})"));
        }
        if truth.page >= 2 * a.block_size {
            let (got, conf) = crate::measure::best_page(a, results.page.get());
            let ok = got == Some(truth.page);
            self.page.add(ok, conf);
            if !ok {
                wrong.push(format!("page {got:?} ({conf:.2})"));
            }
        }
        let o = results.open_au.get();
        for (name, tally, want, sweep) in [
            (
                "linear",
                &mut self.linear,
                truth.linear,
                o.as_ref().and_then(|o| o.linear.clone()),
            ),
            (
                "random",
                &mut self.random,
                truth.random,
                o.as_ref().and_then(|o| o.random.clone()),
            ),
        ] {
            let (got, up_to, at_most, conf) = sweep.map_or((None, 0, None, 0.0), |s| {
                (s.max_open_aus, s.tried_up_to, s.at_most, s.confidence)
            });
            // "No collapse up to N" is right when the card's limit is N or
            // more: a small card cannot hold a sweep that reaches it. "At
            // most M" (an imported run's bound) when it is M or less.
            let ok = got == Some(want)
                || (got.is_none() && at_most.is_none() && up_to > 0 && up_to <= want)
                || (got.is_none() && at_most.is_some_and(|m| up_to <= want && want <= m));
            tally.add(ok, conf);
            if !ok {
                wrong.push(format!("{name} {got:?} ({conf:.2})"));
            }
        }
        let (got, conf) = results
            .fat
            .get()
            .map_or((None, 0.0), |f| (Some(f.fat_area_aus), f.confidence));
        let ok = got == Some(truth.fat);
        self.fat.add(ok, conf);
        if !ok {
            wrong.push(format!("FAT {got:?} ({conf:.2})"));
        }
        wrong
    }

    pub fn show(&self) -> String {
        format!(
            "AU     {}\npage   {}\nlinear {}\nrandom {}\nFAT    {}",
            self.au.show(),
            self.page.show(),
            self.linear.show(),
            self.random.show(),
            self.fat.show()
        )
    }
}
