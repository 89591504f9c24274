//! `flashlab sim reproduce`: run each seed's own workload on the built-in cards and
//! hosts and compare, cell by cell, with the published tables in `calibration/`
//! (copied verbatim from the seeds' transcriptions, so a fresh clone carries them).

mod at91;
mod cf;
pub mod flashbench;
mod hsq;

use serde::{Deserialize, Serialize};

use super::{SimTarget, params_from_spec};
use crate::targets::spec::TargetSpec;
use crate::targets::{AlignedBuf, Request, Target};

/// One compared cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub label: String,
    pub metric: String,
    pub unit: String,
    pub published: f64,
    pub simulated: f64,
    pub error_pct: f64,
}

/// One experiment's comparison, as `sim reproduce --json` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub experiment: String,
    pub rows: Vec<Row>,
    pub max_abs_error_pct: f64,
    /// Rows within the 15% fidelity goal.
    pub within_15_pct: usize,
    /// What the model leaves out, and how the seed's conclusions come out.
    pub notes: Vec<String>,
}

/// The experiments, with the seed table each one reproduces.
pub const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "at91",
        "dd 1 MiB x 10 on two SanDisk cards behind at91_mci, 8 configurations, and boot interrupt counts (the FreeBSD AT91 report)",
    ),
    (
        "hsq",
        "fio 4K seq/rand read/write on an HS400 eMMC without and with the host software queue (the MMC software-queue patch series)",
    ),
    (
        "cf",
        "CompactFlash PIO per-sector timeline and iozone 4K, stock vs multi-sector driver (the NetBSD CompactFlash post)",
    ),
    (
        "flashbench",
        "flashbench align, open-au and find-fat on kingston-sa04g (the Flashbenching blog post) and open-AU thresholds (Arnd Bergmann's open-AU post)",
    ),
];

/// Why an experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReproduceError {
    #[error("unknown experiment '{0}'")]
    Unknown(String),
}

/// Run one experiment by name.
pub fn run(name: &str) -> Result<Report, ReproduceError> {
    let mut b = Builder::default();
    match name {
        "at91" => at91::run(&mut b),
        "hsq" => hsq::run(&mut b),
        "cf" => cf::run(&mut b),
        "flashbench" => flashbench::run(&mut b),
        _ => return Err(ReproduceError::Unknown(name.to_string())),
    }
    Ok(b.finish(name))
}

/// Collects rows and notes.
#[derive(Default)]
pub(crate) struct Builder {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Builder {
    pub(crate) fn row(&mut self, label: impl Into<String>, metric: &str, unit: &str, published: f64, simulated: f64) {
        let error_pct = if published == 0.0 {
            0.0
        } else {
            (simulated - published) / published * 100.0
        };
        self.rows.push(Row {
            label: label.into(),
            metric: metric.to_string(),
            unit: unit.to_string(),
            published,
            simulated: (simulated * 1000.0).round() / 1000.0,
            error_pct: (error_pct * 10.0).round() / 10.0,
        });
    }

    pub(crate) fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    fn finish(self, name: &str) -> Report {
        let max = self.rows.iter().map(|r| r.error_pct.abs()).fold(0.0, f64::max);
        Report {
            experiment: name.to_string(),
            within_15_pct: self.rows.iter().filter(|r| r.error_pct.abs() <= 15.0).count(),
            rows: self.rows,
            max_abs_error_pct: max,
            notes: self.notes,
        }
    }
}

/// A built-in simulated card, timing only (data is irrelevant to these tables).
pub(crate) fn card(spec: &str) -> SimTarget {
    let full = format!("{spec},keep_data=false");
    let Ok(TargetSpec::Sim { base, overrides }) = TargetSpec::parse(&full) else {
        unreachable!("built-in spec {full}")
    };
    let params = params_from_spec(&base, &overrides).unwrap_or_else(|e| panic!("built-in spec {full}: {e}"));
    SimTarget::new(&full, params)
}

/// Run requests (all using buffer offset 0) and return each request's latency, ns.
pub(crate) fn latencies(t: &mut dyn Target, reqs: &[Request], queue_depth: usize) -> Vec<u64> {
    let len = reqs.iter().map(|r| r.len as usize).max().unwrap_or(512);
    let mut buf = AlignedBuf::new(len);
    t.run(reqs, queue_depth, &mut buf)
        .unwrap_or_else(|e| panic!("reproduce workload refused: {e}"))
        .iter()
        .map(|c| c.duration_ns)
        .collect()
}

/// Bytes per second of a workload: total bytes over device time.
pub(crate) fn throughput(t: &mut SimTarget, reqs: &[Request], queue_depth: usize) -> f64 {
    let start = t.device_time_ns();
    latencies(t, reqs, queue_depth);
    let bytes: u64 = reqs.iter().map(|r| u64::from(r.len)).sum();
    bytes as f64 / ((t.device_time_ns() - start) as f64 / 1e9)
}

/// Data lines of a calibration CSV (comments dropped), split on commas.
pub(crate) fn csv(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .skip(1)
        .map(|l| l.split(',').map(str::trim).collect())
        .collect()
}

/// A number from a calibration cell.
pub(crate) fn num(cell: &str) -> f64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("calibration cell '{cell}' is not a number"))
}

/// A seeded xorshift stream for workloads that use random offsets (fio, iozone).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_runs_and_compares_every_published_cell() {
        for (name, _) in EXPERIMENTS {
            let r = run(name).unwrap();
            assert!(!r.rows.is_empty(), "{name}");
            for row in &r.rows {
                assert!(
                    row.simulated.is_finite() && row.published.is_finite(),
                    "{name}: {row:?}"
                );
            }
        }
        assert!(run("nope").is_err());
    }
}

#[cfg(test)]
mod conclusions {
    //! The seeds' qualitative conclusions, checked on the simulated tables.
    use super::*;

    fn row<'a>(r: &'a Report, label: &str, metric: &str) -> &'a Row {
        r.rows
            .iter()
            .find(|row| row.label == label && row.metric == metric)
            .unwrap_or_else(|| panic!("no row {label} / {metric}"))
    }

    fn sim(r: &Report, label: &str, metric: &str) -> f64 {
        row(r, label, metric).simulated
    }

    #[test]
    fn at91_multi_block_lifts_the_big_card_and_4_bit_helps_reads_only() {
        let r = run("at91").unwrap();
        assert_eq!(r.within_15_pct, r.rows.len(), "{:#?}", r.rows);
        let single = sim(&r, "8192-block erase, 30 MHz 1-bit, 1-block", "dd write");
        let multi = sim(&r, "8192-block erase, 30 MHz 1-bit, 64-block", "dd write");
        assert!(single < 30_000.0 && multi > 1_400_000.0, "{single} -> {multi}");
        let r1 = sim(&r, "32-block erase, 30 MHz 1-bit, 64-block", "dd read");
        let r4 = sim(&r, "32-block erase, 15 MHz 4-bit, 64-block", "dd read");
        let w1 = sim(&r, "32-block erase, 30 MHz 1-bit, 64-block", "dd write");
        let w4 = sim(&r, "32-block erase, 15 MHz 4-bit, 64-block", "dd write");
        assert!((1.3..1.5).contains(&(r4 / r1)), "reads {}", r4 / r1);
        assert!((0.97..1.05).contains(&(w4 / w1)), "writes {}", w4 / w1);
        let ratio = sim(&r, "single vs multi-block", "interrupt ratio");
        assert!((30.0..32.0).contains(&ratio), "{ratio}");
    }

    #[test]
    fn hsq_doubles_random_writes_and_leaves_the_rest_within_bounds() {
        let r = run("hsq").unwrap();
        assert_eq!(r.within_15_pct, r.rows.len(), "{:#?}", r.rows);
        let gain =
            |w: &str| sim(&r, &format!("{w}, with hsq"), "fio 4K") / sim(&r, &format!("{w}, without hsq"), "fio 4K");
        assert!(gain("rand_write") > 1.7, "{}", gain("rand_write"));
        assert!(gain("rand_read") > 1.0 && gain("rand_read") < 1.3);
    }

    #[test]
    fn open_au_collapse_points_match_the_seeds() {
        let r = run("flashbench").unwrap();
        let rate = |label: &str| sim(&r, label, "write");
        // Kingston: 3 open AUs stay fast at 128 KiB, 4 collapse.
        let k3 = rate("kingston-sa04g open-au linear 3 AUs, 128 KiB");
        let k4 = rate("kingston-sa04g open-au linear 4 AUs, 128 KiB");
        assert!(k3 > 10.0 * k4, "{k3} vs {k4}");
        // Toshiba collapses at 8, SanDisk at 21.
        let t7 = rate("toshiba-7au open-au linear 7 AUs, 256 KiB");
        let t8 = rate("toshiba-7au open-au linear 8 AUs, 256 KiB");
        assert!(t7 > 4.0 * t8, "{t7} vs {t8}");
        let s20 = rate("sandisk-20au open-au linear 20 AUs, 256 KiB");
        let s21 = rate("sandisk-20au open-au linear 21 AUs, 256 KiB");
        assert!(s20 > 4.0 * s21, "{s20} vs {s21}");
    }

    #[test]
    fn flashbench_tables_keep_their_cells() {
        // 201 of 236 within 15% since a read straddling the Kingston's
        // 1 KiB codewords moves one more (199 before; 187 before the
        // Toshiba programmed an AU's opening run slower; 179 before the Kingston's first
        // two AUs programmed slower; 176 before it kept a log begun mid-AU
        // open at the AU's end; 170 before its random-mode pages cost a
        // page copy more); every group beyond is named in the report's
        // note.
        let r = run("flashbench").unwrap();
        assert_eq!(r.rows.len(), 236);
        assert!(r.within_15_pct >= 201, "{} of 236", r.within_15_pct);
        let within = |label: &str, metric: &str| {
            let cell = row(&r, label, metric);
            let err = (cell.simulated - cell.published) / cell.published;
            assert!(err.abs() <= 0.15, "{label} {metric}: {err:+.3}");
        };
        for chunk in ["16 KiB", "128 KiB", "256 KiB", "2 MiB"] {
            within(&format!("kingston-sa04g open-au random 1 AU, {chunk}"), "write");
        }
        // The step below the page: a 1 KiB read across 2 and 4 KiB.
        for align in ["2 KiB", "4 KiB"] {
            within(&format!("align {align}"), "diff");
        }
        // Every Toshiba row, in order up to and past its 7 AUs.
        let toshiba: Vec<&Row> = r.rows.iter().filter(|c| c.label.starts_with("toshiba-7au")).collect();
        assert_eq!(toshiba.len(), 16);
        for cell in toshiba {
            within(&cell.label, &cell.metric);
        }
        // find-fat's first two AUs, slower at every chunk but the first.
        for chunk in [
            "2 MiB", "1 MiB", "512 KiB", "256 KiB", "128 KiB", "64 KiB", "32 KiB", "16 KiB",
        ] {
            for au in ["au0", "au1"] {
                within(&format!("kingston-sa04g find-fat {chunk}"), au);
            }
        }
    }

    #[test]
    fn multi_sector_cf_reads_about_twice_as_fast() {
        let r = run("cf").unwrap();
        for card in ["Sandisk Ultra II", "SimpleTech/OEM"] {
            let stock = sim(&r, &format!("{card}, stock"), "iozone read");
            let multi = sim(&r, &format!("{card}, multi-sector"), "iozone read");
            assert!(multi / stock > 2.0, "{card}: {}", multi / stock);
        }
    }

    /// iozone's rewrite reads each record before it writes it (see
    /// `cf::phase`): its time a record is the write's and the read's, and
    /// every rewrite cell is within 15% (each was 68-84% too fast when the
    /// rewrite was a write alone).
    #[test]
    fn a_cf_rewrite_costs_a_read_and_a_write() {
        let r = run("cf").unwrap();
        for label in [
            "Sandisk Ultra II, stock",
            "SimpleTech/OEM, stock",
            "Sandisk Ultra II, multi-sector",
        ] {
            let (w, rd, rw) = (
                sim(&r, label, "iozone write"),
                sim(&r, label, "iozone read"),
                sim(&r, label, "iozone rewrite"),
            );
            let both = 1.0 / (1.0 / w + 1.0 / rd);
            assert!((rw / both - 1.0).abs() < 0.01, "{label}: {rw} against {both}");
        }
        for row in r.rows.iter().filter(|row| row.metric == "iozone rewrite") {
            assert!(row.error_pct.abs() <= 15.0, "{row:?}");
        }
        assert_eq!(r.within_15_pct, 34, "{:#?}", r.rows);
    }

    /// The SimpleTech card's 36 us a read command (`card_access_ns`) comes
    /// from the PIO timeline's single-sector reads, 570 us a sector; with
    /// it every read cell of that card is within 15% (the multi-sector
    /// backward read was 15.2% fast without it).
    #[test]
    fn simpletech_reads_pay_the_timeline_s_time_a_command() {
        let r = run("cf").unwrap();
        let per_sector = row(&r, "single-sector read", "total per sector");
        assert!(per_sector.error_pct.abs() < 1.0, "{per_sector:?}");
        let reads = r
            .rows
            .iter()
            .filter(|row| row.label.starts_with("SimpleTech") && row.metric.ends_with("read"));
        assert_eq!(reads.clone().count(), 10);
        for row in reads {
            assert!(row.error_pct.abs() <= 15.0, "{row:?}");
        }
    }
}
