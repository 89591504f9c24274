//! Years of life: how soon the most worn block reaches its erase cycles.
//!
//! The cycles are a prior, not a measurement: no SD card reports its own.
//! The rated figure of the card's cell type (`cell`, `pe_cycles`; the
//! sources in `docs/SOURCES.md`, "Transcend, NAND types" and "Kalstor, NAND
//! types") is where the prior's P90 sits. Published endurance tests fail
//! cards below it: Gough Lui's 8 GB USB sticks after 632 and 959 full-card
//! writes, and the Great microSD Card Survey's cards after 27 to 4,634 by
//! brand (`docs/SOURCES.md`). So the prior's P50 is 0.6 of the rating
//! (Lui's two fall between P50 and P90 of a 1,000-cycle rating) and its
//! P10 a quarter; the survey's worst brands fail below even that, and
//! its best last past the rating of the cell most cards use. A stated
//! choice bounded by those figures; `--pe N` replaces it with the user's N.
//!
//! Which block wears first depends on the card's wear levelling (`wear_leveling`):
//! - none: the block that took the most erases over the passes replayed
//!   keeps taking them at that rate;
//! - dynamic: new data goes to the least worn free block, so the erases
//!   spread over the blocks that ever come free (those the replay erased);
//! - static: cold data moves too, so they spread over every block.

use super::Quantiles;
use crate::sim::params::WearLeveling;

/// The prior's quantiles as shares of the rated cycles (see above).
const PRIOR_SHARES: [f64; 3] = [0.25, 0.6, 1.0];

/// The erase cycles one block takes: the user's figure, or the prior.
pub fn pe_prior(rated: u64, known: Option<u64>) -> Quantiles {
    if let Some(n) = known {
        let n = n as f64;
        return Quantiles { p10: n, p50: n, p90: n };
    }
    let r = rated as f64;
    Quantiles {
        p10: r * PRIOR_SHARES[0],
        p50: r * PRIOR_SHARES[1],
        p90: r * PRIOR_SHARES[2],
    }
}

/// What the replayed pass did to the card's blocks.
#[derive(Debug, Clone, Copy)]
pub struct Wear {
    pub policy: WearLeveling,
    /// Every physical block, spare ones included.
    pub blocks: u64,
    /// Blocks erased at least once over the whole replay.
    pub blocks_erased: u64,
    /// Erases a day of the block that took most over every pass replayed.
    pub hottest_per_day: f64,
}

/// Erases a day of the block that wears first.
pub fn worst_block_per_day(wear: &Wear, erases_per_day: f64) -> f64 {
    match wear.policy {
        // The hottest block, and never cooler than an even spread over the
        // blocks that took erases.
        WearLeveling::None => wear
            .hottest_per_day
            .max(erases_per_day / wear.blocks_erased.max(1) as f64),
        WearLeveling::Dynamic => erases_per_day / wear.blocks_erased.max(1) as f64,
        WearLeveling::Static => erases_per_day / wear.blocks.max(1) as f64,
    }
}

/// Years until the first block wears out, for each quantile of the
/// cycles; none where the pass erased nothing (or spanned no time).
pub fn years(pe: &Quantiles, wear: &Wear, days: f64, erases_per_day: f64) -> Option<Quantiles> {
    if days <= 0.0 || erases_per_day <= 0.0 {
        return None;
    }
    let rate = worst_block_per_day(wear, erases_per_day);
    let years = |cycles: f64| cycles / rate / 365.25;
    (rate > 0.0).then(|| Quantiles {
        p10: years(pe.p10),
        p50: years(pe.p50),
        p90: years(pe.p90),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NHTSA's Tesla case (as Tuxera summarised it, `docs/SOURCES.md`): an
    /// 8 GB eMMC rated 3,000 cycles, worn 0.7 full-device cycles a day
    /// under even wear, lasts 11-12 years; at 1.5 a day, 5-6.
    #[test]
    fn the_tesla_emmc_lasts_eleven_to_twelve_years() {
        let blocks = 8 * 1024 / 4;
        for (cycles_a_day, low, high) in [(0.7, 11.0, 12.0), (1.5, 5.0, 6.0)] {
            let wear = Wear {
                policy: WearLeveling::Static,
                blocks,
                blocks_erased: blocks,
                hottest_per_day: 0.0,
            };
            let y = years(&pe_prior(1_000, Some(3_000)), &wear, 1.0, cycles_a_day * blocks as f64).unwrap();
            assert!(y.p50 > low && y.p50 < high, "{cycles_a_day}/day: {} years", y.p50);
            assert_eq!(y.p10, y.p90, "a known cycle count has no spread");
        }
    }

    /// Gough Lui's sticks, 632 and 959 full-card writes to failure, fall
    /// between the prior's P50 and P90 of a 1,000-cycle rating.
    #[test]
    fn the_prior_brackets_published_endurance() {
        let q = pe_prior(1_000, None);
        assert_eq!((q.p10, q.p50, q.p90), (250.0, 600.0, 1_000.0));
        assert!(q.p50 <= 632.0 && 959.0 <= q.p90);
    }

    #[test]
    fn without_levelling_the_hottest_block_decides() {
        let wear = Wear {
            policy: WearLeveling::None,
            blocks: 1000,
            blocks_erased: 10,
            hottest_per_day: 50.0,
        };
        let y = years(&pe_prior(1_000, Some(1_000)), &wear, 1.0, 100.0).unwrap();
        assert!((y.p50 - 1_000.0 / 50.0 / 365.25).abs() < 1e-9);
        let dynamic = Wear {
            policy: WearLeveling::Dynamic,
            ..wear
        };
        let y = years(&pe_prior(1_000, Some(1_000)), &dynamic, 1.0, 100.0).unwrap();
        assert!((y.p50 - 1_000.0 / 10.0 / 365.25).abs() < 1e-9);
        // Never cooler than an even spread: 100 erases over 10 blocks.
        let cool = Wear {
            hottest_per_day: 1.0,
            ..wear
        };
        let y = years(&pe_prior(1_000, Some(1_000)), &cool, 1.0, 100.0).unwrap();
        assert!((y.p50 - 1_000.0 / 10.0 / 365.25).abs() < 1e-9);
        assert_eq!(years(&pe_prior(1_000, None), &wear, 1.0, 0.0), None);
    }
}
