//! What a count's visit times say: which visits are slow, whether their
//! slowness is the card's (merges) or the path's (a stall), and whether a
//! count is slower than its baseline or its control.

/// A count whose visits take this many times the one-AU baseline's (by
/// median, or by mean without the slowest tenth) is collapsed, in two
/// windows in a row: the faint collapse
/// of a card whose merges are cheap next to its writes (cf-simpletech-oem: 16
/// KiB AUs written over PIO only halve their speed past the limit), while
/// counts below the limit stay within 1.1 of the baseline (the property
/// test's highest on 1,600 cards).
const COLLAPSE: f64 = 1.5;
/// A write this many times the baseline's median is a merge (or an outlier).
/// A merge copies pages of an AU and erases it: a 4 MiB AU of 16 KiB pages
/// costs ~100 writes' time, a 128 MiB AU of 4 KiB pages ~15,000.
pub(super) const SLOW: f64 = 8.0;
/// Visits after which a count that is plainly slower (three times the
/// baseline) is called collapsed without waiting for two windows.
const EARLY_LOOK: usize = 6;

/// A slow visit that takes this long is a merge, not a stall of the path.
/// Stalls of the path are milliseconds: through emulated cards, the latest
/// answer of 13 probes at time scale 1 came 8.6 ms past its moment, and with
/// a build beside fio a program waited a mean 0.4 ms between requests
/// (`scripts/probe-vs-emulate.sh`, `scripts/emulate-vs-model.sh`; figures in
/// the README). A 64 MiB AU of 4 KiB pages behind an AT91 host merges in
/// about 45 s: there, judging the collapse again (two more merges) and its
/// control took more than the in-order sweep's 73 s share of the budget and
/// left the verdict unsure, with the collapse plain from its first three
/// visits.
const STALL_NS: f64 = 1e9;

/// Whether a collapsed count's slow visits last longer than any stall of the
/// path ([`STALL_NS`], by their median, two at least): then the collapse
/// stands without being judged again.
pub(super) fn beyond_a_stall(lat: &[f64], base: &Stats) -> bool {
    let slow: Vec<f64> = lat.iter().copied().filter(|&l| l >= SLOW * base.median).collect();
    slow.len() >= 2 && crate::measure::median(&slow) >= STALL_NS
}

/// Whether a collapse judged again read back slowly (each visit's read
/// before its write, [`SLOW`] times the one-AU visits' reads) on a quarter
/// of its visits and two at least: a card merges on writes, while a stall
/// of the path slows reads as much. Through an emulated demo card in CI,
/// with the other tests running beside it, the random sweep collapsed at
/// 11 twice and its control at 10 held, where the card keeps 24
/// (`tests/integration/emulate/real_path.rs`). On a quiet machine the same
/// card's counts judged again read slowly on at most 3 of 72 visits, and
/// the model's never.
pub(super) fn path_stalled(slow_reads: usize, visits: usize) -> bool {
    slow_reads >= 2 && 4 * slow_reads >= visits
}

/// Whether the visits `lat` of a count judged again are [`COLLAPSE`] times
/// slower than the `control`'s just before them, by their means without
/// the slowest tenth: a collapse that merges on some visits only, spread
/// over the AUs, which the sequential test (a slow visit counts only after
/// another to the same AU) never calls. After its control the simulated
/// demo card's random collapse at 25 merged on about a quarter of the
/// visits, at 2.54 MB/s against the control's 15.73, where its first
/// judgment merged on all.
pub(super) fn slower_than(lat: &[f64], control: &[f64]) -> bool {
    !lat.is_empty() && !control.is_empty() && trimmed_mean(lat) >= COLLAPSE * trimmed_mean(control)
}

/// The baseline's median and its mean without the slowest tenth.
pub(super) struct Stats {
    pub(super) median: f64,
    trimmed: f64,
}

impl Stats {
    pub(super) fn of(lat: &[f64]) -> Stats {
        Stats {
            median: crate::measure::median(lat).max(1.0),
            trimmed: trimmed_mean(lat).max(1.0),
        }
    }

    /// What the ratios of the visits `scored` so far, against this
    /// baseline, say. A plain collapse needs no second window: the median
    /// and the trimmed mean of the first [`EARLY_LOOK`] visits both three
    /// times the baseline's (half of them slow at least: outliers of a few
    /// percent do that about once in 10^4 counts). Otherwise, at the end of
    /// each `window`, the median (a card whose one-AU writes do their own
    /// housekeeping every few, where a collapse moves the typical visit) or
    /// the mean without the slowest tenth (where only some visits merge)
    /// over [`COLLAPSE`]; two such windows in a row (`over` counts them).
    pub(super) fn ratios_collapsed(&self, scored: &[f64], window: usize, over: &mut u32) -> bool {
        let m = scored.len();
        if m == EARLY_LOOK
            && crate::measure::median(scored) >= 3.0 * self.median
            && trimmed_mean(scored) >= 3.0 * self.trimmed
        {
            return true;
        }
        if m.is_multiple_of(window) {
            let w = &scored[m - window..];
            let r = (crate::measure::median(w) / self.median).max(trimmed_mean(w) / self.trimmed);
            *over = if r > COLLAPSE { *over + 1 } else { 0 };
        }
        *over >= 2
    }
}

/// The mean without the slowest tenth (two at least): a stall of the card's
/// own is rare and alone, while a card past its limit merges again and again.
fn trimmed_mean(lat: &[f64]) -> f64 {
    let mut v = lat.to_vec();
    v.sort_by(f64::total_cmp);
    let keep = v.len().saturating_sub((v.len() / 10).max(2)).max(v.len().min(1));
    v[..keep].iter().sum::<f64>() / keep.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_slow_visits_past_any_stall_stand_without_a_second_judgment() {
        // A 3 ms baseline; an AT91 host's 64 MiB merges of ~45 s stand.
        let base = Stats::of(&[3e6; 24]);
        assert!(beyond_a_stall(&[3e6, 45e9, 44e9, 46e9], &base));
        // sim:kingston-sa04g's merges through an emulation: 0.3-0.7 s.
        assert!(!beyond_a_stall(&[3e6, 0.6e9, 0.7e9, 0.5e9], &base));
        assert!(!beyond_a_stall(&[3e6, 45e9], &base), "one slow visit");
        // Slow by the median: an outlier among merges does not tip it.
        assert!(beyond_a_stall(&[3e6, 45e9, 0.1e9, 46e9], &base));
        assert!(!beyond_a_stall(&[3e6; 6], &base));
    }

    #[test]
    fn a_quarter_of_slow_reads_and_two_at_least_is_a_stall() {
        assert!(path_stalled(3, 12));
        assert!(!path_stalled(3, 13));
        assert!(path_stalled(2, 3));
        assert!(!path_stalled(1, 3), "one slow read is an outlier");
        assert!(!path_stalled(0, 0));
    }

    #[test]
    fn a_count_is_slower_than_its_control_by_its_typical_visit() {
        let control = [1.5e6; 40];
        // The demo card's random collapse after its control: a quarter of
        // the visits merge (33 ms each).
        let faint: Vec<f64> = (0..40).map(|i| if i % 4 == 0 { 33e6 } else { 1.5e6 }).collect();
        assert!(slower_than(&faint, &control));
        // Four stalls among 40 visits are the slowest tenth, dropped.
        let stalls: Vec<f64> = (0..40).map(|i| if i % 10 == 0 { 33e6 } else { 1.5e6 }).collect();
        assert!(!slower_than(&stalls, &control));
        assert!(!slower_than(&[], &control));
        assert!(!slower_than(&faint, &[]));
    }
}
