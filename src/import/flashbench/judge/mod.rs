//! flashbench's tables read as flashlab reads its own measurements: the
//! `-a` rows through align's fit (the same hypotheses, the same calibrated
//! confidence), `--open-au` runs by the collapse open-au looks for,
//! `--find-fat` columns by the AUs that stand apart. Several runs of one
//! card are judged together, and where flashbench's output misleads, a
//! note says how.

mod align;
mod fat;
mod open_au;

use self::align::judge_align;
use self::fat::judge_fat;
use self::open_au::{OpenRun, judge_open_au};
use super::Table;
use super::parse::{AlignRun, Parsed, RateKind};
use crate::measure::align::AlignResult;
use crate::measure::fat::FatResult;
use crate::measure::open_au::OpenAuResult;
use crate::measure::scatter::{Point, ScatterResult};

/// Confidence a verdict keeps when the rows disagree with it or among
/// themselves: below [`CONFIDENT`](crate::measure::CONFIDENT), so it reads as unsure.
const DISPUTED: f64 = 0.45;

/// What was judged, with the words for the reader.
#[derive(Debug, Default)]
pub struct Judged {
    pub align: Option<AlignResult>,
    pub open_au: Option<OpenAuResult>,
    pub fat: Option<FatResult>,
    pub scatter: Option<ScatterResult>,
    /// How the output was read and where it misleads.
    pub notes: Vec<String>,
}

/// One input's tables, named for the notes.
pub struct Input<'a> {
    pub name: &'a str,
    pub parsed: &'a Parsed,
}

/// Judge every table of every input as runs of one card; `column` picks
/// one column of a table of several cards.
pub fn judge(inputs: &[Input<'_>], column: Option<usize>, tables: &mut Vec<Table>) -> Judged {
    let mut j = Judged::default();
    let mut aligns: Vec<(&str, &AlignRun)> = Vec::new();
    let mut opens: Vec<OpenRun> = Vec::new();
    let mut fats: Vec<(&str, &super::parse::RateRun)> = Vec::new();
    for input in inputs {
        let p = input.parsed;
        for a in &p.align {
            tables.push(Table::new(
                input.name,
                a.rows.first().map_or(a.cut.unwrap_or(0), |r| r.line),
                "align",
                a.rows.len(),
                a.invocation.as_ref(),
                a.cut,
            ));
            if let Some(cut) = a.cut {
                j.notes.push(format!(
                    "{}:{cut}: an -a row is cut off before its diff and is left out",
                    input.name
                ));
            }
            aligns.push((input.name, a));
        }
        for r in &p.rates {
            let kind = match r.kind {
                RateKind::OpenAu if r.invocation.as_ref().is_some_and(|i| i.random) => "open-au --random",
                RateKind::OpenAu => "open-au",
                RateKind::FindFat => "find-fat",
            };
            let first = r.rows.first().map_or(0, |x| x.line);
            tables.push(Table::new(
                input.name,
                first,
                kind,
                r.rows.len(),
                r.invocation.as_ref(),
                r.cut,
            ));
            match r.kind {
                RateKind::OpenAu => opens.push(OpenRun::of(input.name, first, r.invocation.as_ref(), &r.rows, 0)),
                RateKind::FindFat => fats.push((input.name, r)),
            }
        }
        for c in &p.columns {
            let first = c.rows.first().map_or(c.line, |x| x.line);
            tables.push(Table::new(
                input.name,
                c.line,
                "columns",
                c.rows.len(),
                c.invocation.as_ref(),
                None,
            ));
            if let Some(k) = column.filter(|&k| k < c.names.len()) {
                opens.push(OpenRun::of(input.name, first, c.invocation.as_ref(), &c.rows, k));
            }
        }
        // Tables without their command, in a file that names one in
        // prose: the note says how to give it.
        let bare = p
            .rates
            .iter()
            .any(|r| r.kind == RateKind::OpenAu && r.invocation.is_none())
            || p.columns.iter().any(|c| c.invocation.is_none());
        if let (true, Some((line, options))) = (bare, &p.mentioned) {
            j.notes.push(format!(
                "{}:{line} names the command these tables came from, `flashbench {options}`: give it with \
                 --command '{options}' to judge them",
                input.name
            ));
        }
        for s in &p.scatter {
            tables.push(Table::new(input.name, s.line, "scatter", s.points.len(), None, None));
        }
        if j.scatter.is_none() {
            j.scatter = p.scatter.first().and_then(|s| scatter(&s.points));
        }
    }
    j.align = judge_align(&aligns, &mut j.notes);
    j.open_au = judge_open_au(&opens, j.align.as_ref(), &mut j.notes);
    j.fat = judge_fat(&fats, &mut j.notes);
    j
}

/// flashbench's scatter points (MiB, ms) as a scatter result.
fn scatter(points: &[(f64, f64)]) -> Option<ScatterResult> {
    let mut offsets: Vec<u64> = points.iter().map(|p| (p.0 * 1048576.0).round() as u64).collect();
    offsets.sort_unstable();
    let step = offsets.windows(2).map(|w| w[1] - w[0]).filter(|&d| d > 0).min()?;
    Some(ScatterResult {
        offset_bytes: 0,
        length_bytes: offsets.last()? + step,
        block_size: step,
        points: points
            .iter()
            .map(|p| Point {
                offset: (p.0 * 1048576.0).round() as u64,
                latency_ns: (p.1 * 1e6).round() as u64,
            })
            .collect(),
    })
}

/// One output judged alone, as an unnamed input and with no list of its
/// tables: what scoring a generated card, and the tests, ask.
pub fn judge_one(parsed: &Parsed) -> Judged {
    judge(&[Input { name: "-", parsed }], None, &mut Vec::new())
}

#[cfg(test)]
mod tests {
    use super::judge_one;

    /// flashbench's text, parsed and judged as one input.
    fn judged(text: &str) -> super::Judged {
        judge_one(&super::super::parse(text).expect("parses"))
    }

    /// `--random` runs of a 4 MiB erase block, each a count and its nine
    /// rates in MB/s (4 MiB down to 16 KiB): the limit read and the notes.
    fn random_runs(runs: &[(u64, [f64; 9])]) -> (Option<u64>, Vec<String>) {
        let rows = [4096u64, 2048, 1024, 512, 256, 128, 64, 32, 16];
        let mut text = String::new();
        for (n, rates) in runs {
            text += &format!(
                "$ sudo ./flashbench /dev/mmcblk0 --open-au --erasesize=4194304 --blocksize=16384 --random \
                 --open-au-nr={n}\n"
            );
            for (kib, m) in rows.iter().zip(rates) {
                let size = if *kib >= 1024 {
                    format!("{}MiB", kib / 1024)
                } else {
                    format!("{kib}KiB")
                };
                text += &format!("{size:<7} {m:.3}M/s \n");
            }
        }
        let j = judged(&text);
        (j.open_au.and_then(|o| o.random).and_then(|s| s.max_open_aus), j.notes)
    }

    /// Three `--random` runs behind a slow host: rates flat over the chunk
    /// (each write's time grows with it), so the shape alone says "fine" at
    /// every count. The third differs from the second by `last`.
    fn random_limit(last: [f64; 9]) -> (Option<u64>, Vec<String>) {
        random_runs(&[
            (3, [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]),
            (4, [2.1, 1.9, 2.0, 2.2, 1.8, 2.0, 2.1, 1.9, 2.0]),
            (5, last),
        ])
    }

    #[test]
    fn a_first_run_its_shape_leaves_unclear_is_fine_when_the_next_collapses_from_it() {
        // At 1 AU the rate falls as the square root of the chunk below 1
        // MiB (a random write's own cost): neither flat time per write nor
        // time growing with the chunk. At 2 AUs each round also merges: 4x
        // slower at 16 KiB, less in proportion above.
        let kib = [4096.0, 2048.0, 1024.0, 512.0, 256.0, 128.0, 64.0, 32.0, 16.0];
        let one = kib.map(|c: f64| 20.0 * (c.min(1024.0) / 1024.0).sqrt());
        let two = std::array::from_fn(|i| one[i] / (1.0 + 3.0 * 16.0 / kib[i]));
        let (limit, notes) = random_runs(&[(1, one), (2, two)]);
        assert_eq!(limit, Some(1), "{notes:?}");
        assert!(!notes.iter().any(|n| n.contains("neither")), "{notes:?}");
    }

    /// One -a run of 2^n boundaries up to `largest` (and 3 x 2^n ones
    /// between them with `threes`), each reading `step(boundary)` µs plus
    /// a scatter of about 1 µs, judged.
    fn align_of(largest: u64, threes: bool, step: impl Fn(u64) -> f64) -> crate::measure::align::AlignResult {
        let mut text = String::from("$ sudo ./flashbench -a /dev/mmcblk0 --blocksize=1024\n");
        let mut bounds = Vec::new();
        let mut b = largest;
        while b >= 2048 {
            bounds.push(b);
            if threes && (8192..largest).contains(&b) {
                bounds.push(3 * b / 4);
            }
            b /= 2;
        }
        bounds.sort_unstable_by(|x, y| y.cmp(x));
        for (i, b) in bounds.into_iter().enumerate() {
            let diff = [0.4, -0.9, 1.1, -0.3, 0.8, -1.2, 0.2][i % 7] + step(b);
            let on = 820.0 + diff;
            text += &format!("align {b}\tpre 820µs\ton {on:.1}µs\tpost 820µs\tdiff {diff:.2}µs\n");
        }
        judged(&text).align.expect("an align verdict")
    }

    /// [`align_of`] with 3 x 2^n rows: the erase block and its confidence.
    fn one_run(largest: u64, step: impl Fn(u64) -> f64) -> (Option<u64>, f64) {
        let a = align_of(largest, true, step);
        (a.erase_size_bytes, a.confidence)
    }

    #[test]
    fn a_top_row_alone_far_above_the_rest_makes_neither_page_nor_erase_block_sure() {
        const MIB: u64 = 1 << 20;
        // flashbench 62 on a 256 MiB card emulated behind at91-mci: a 48 µs
        // step at 1 MiB, and the 64 MiB row (whose reads wrap around the
        // card's end) at twice that in three runs of three.
        let a = align_of(64 * MIB, false, |b| {
            if b == 64 * MIB {
                98.0
            } else if b.is_multiple_of(MIB) {
                48.0
            } else {
                0.0
            }
        });
        let sure =
            |size: Option<u64>, c: f64, truth: u64| size.is_none_or(|s| s == truth) || c < crate::measure::CONFIDENT;
        assert!(sure(a.erase_size_bytes, a.confidence, MIB), "{a:?}");
        assert!(sure(a.page_size_bytes, a.page_confidence, 16 << 10), "{a:?}");
    }

    /// One -a run whose two largest boundaries, 16 and 32 MiB, read `top`
    /// µs above the rest.
    fn top_rows(top: f64) -> (Option<u64>, f64) {
        one_run(
            32 << 20,
            |b| if b >= 16 << 20 && b.is_power_of_two() { top } else { 0.0 },
        )
    }

    #[test]
    fn a_small_step_above_a_large_one_is_unsure_and_a_plain_one_is_not() {
        const MIB: u64 = 1 << 20;
        // A 48 µs step at 1 MiB, and the rows from 8 MiB up 4.5 µs higher:
        // under three times a row's scatter (1.6 µs, align's floor of 0.2%
        // of an 820 µs read), which the fit alone takes for an 8 MiB erase
        // block at 0.955.
        let rows = |extra: f64| {
            move |b: u64| if b.is_multiple_of(MIB) { 48.0 } else { 0.0 } + if b.is_multiple_of(8 * MIB) { extra } else { 0.0 }
        };
        let (erase, c) = one_run(64 * MIB, rows(4.5));
        assert!(
            erase != Some(8 * MIB) || c < crate::measure::CONFIDENT,
            "{erase:?} at {c}: 4.5 µs over a 48 µs step is a few rows' drift"
        );
        let (erase, c) = one_run(64 * MIB, rows(40.0));
        assert_eq!(erase, Some(8 * MIB));
        assert!(c >= crate::measure::CONFIDENT, "a 40 µs step is plain: {c}");
    }

    #[test]
    fn a_three_times_two_to_the_n_erase_block_needs_its_two_to_the_n_rows_low() {
        const MIB: u64 = 1 << 20;
        // A 1 MiB erase block whose 3 x 2^n rows read 12 µs high: the 2^n
        // rows carry 43 of 55 µs, far from the 2/7 a 3 MiB one gives them.
        let (erase, c) = one_run(64 * MIB, |b| {
            if b.is_multiple_of(3 * MIB) {
                55.0
            } else if b.is_multiple_of(MIB) {
                43.0
            } else {
                0.0
            }
        });
        assert!(
            erase != Some(3 * MIB) || c < crate::measure::CONFIDENT,
            "{erase:?} at {c}"
        );
        // A 3 MiB erase block: its 2^n rows from 1 MiB up carry 2/7.
        let (erase, c) = one_run(64 * MIB, |b| {
            if b.is_multiple_of(3 * MIB) {
                48.0
            } else if b.is_power_of_two() && b >= MIB {
                48.0 * 2.0 / 7.0
            } else {
                0.0
            }
        });
        assert_eq!(erase, Some(3 * MIB));
        assert!(c >= crate::measure::CONFIDENT, "{c}");
    }

    #[test]
    fn a_step_in_the_top_two_rows_alone_is_confident_only_when_plain() {
        let (erase, c) = top_rows(6.0);
        assert!(
            erase != Some(16 << 20) || c < crate::measure::CONFIDENT,
            "{erase:?} at {c}: two rows 6 µs high are not an erase block"
        );
        let (erase, c) = top_rows(60.0);
        assert_eq!(erase, Some(16 << 20));
        assert!(c >= crate::measure::CONFIDENT, "a 60 µs step is plain: {c}");
    }

    #[test]
    fn a_drop_growing_as_the_chunk_shrinks_is_a_collapse_and_scattered_noise_is_not() {
        // One merge every other round, mostly hidden by a slow host: the
        // extra time doubles with each halving of the chunk, 1.9x at the
        // smallest (the fitted share is 0.84).
        let (limit, notes) = random_limit([2.0, 2.0, 2.0, 1.98, 1.95, 1.9, 1.7, 1.45, 1.05]);
        assert_eq!(limit, Some(4));
        assert!(!notes.iter().any(|n| n.contains("collapsed plainly")), "{notes:?}");
        // Rows up to 1.4x slower, but scattered either way and least at the
        // smallest chunk: no limit, and the runs that would find it are
        // named.
        let (limit, notes) = random_limit([2.0, 2.0, 1.5, 2.3, 1.4, 2.4, 1.6, 2.2, 1.8]);
        assert_eq!(limit, None);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("no random run collapsed plainly")
                    && n.contains("--open-au-nr=6 and 7 with --random")),
            "{notes:?}"
        );
    }
}
