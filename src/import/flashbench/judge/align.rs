//! flashbench's `-a` rows read through align's fit, runs of one card
//! judged together, then weighed by the rules below: each may make the
//! erase block or the page unsure, and says why.

use super::super::DEFAULT_BLOCKSIZE;
use super::super::parse::{AlignRow, AlignRun, Diff};
use super::DISPUTED;
use crate::measure::align::{self, AlignResult, Estimate, Verdict};
use crate::measure::{CONFIDENT, median};
use crate::units::Iec;

/// A run's diffs scatter: the median step between neighbouring boundaries
/// (a table has at most a few real steps, so the median is the noise),
/// as a standard deviation of one row; never below align's floor.
fn row_noise(rows: &[(u64, f64, f64)]) -> f64 {
    let mut sorted: Vec<(u64, f64, f64)> = rows.to_vec();
    sorted.sort_by_key(|r| r.0);
    let steps: Vec<f64> = sorted.windows(2).map(|w| (w[1].1 - w[0].1).abs()).collect();
    let read = median(&sorted.iter().map(|r| r.2).collect::<Vec<_>>());
    // median |difference of two normals| = 0.6745 x sqrt(2) sigma.
    let sigma = if steps.is_empty() { 0.0 } else { median(&steps) / 0.954 };
    sigma.max(align::noise_floor(read))
}

/// The read block of an -a table: its command line's --blocksize, else
/// half its smallest boundary (flashbench stops at two blocks).
fn block_of(run: &AlignRun) -> u64 {
    match run.invocation.as_ref() {
        Some(i) => i.blocksize.unwrap_or(DEFAULT_BLOCKSIZE),
        None => run.rows.iter().map(|r| r.boundary).min().unwrap_or(2048) / 2,
    }
}

/// One run read alone.
struct Alone {
    name: String,
    /// The line its first row is on.
    line: usize,
    /// (boundary, diff, read) in ns.
    rows: Vec<(u64, f64, f64)>,
    /// Its row noise ([`row_noise`]).
    sigma: f64,
    /// Its own verdict.
    verdict: Verdict,
}

/// All runs together: each boundary's diffs and median read, the noise of
/// a row, and each boundary's mean diff with its standard error.
struct Together {
    per: Vec<(u64, Vec<f64>, f64)>,
    sigma: f64,
    est: Vec<Estimate>,
}

pub(super) fn judge_align(runs: &[(&str, &AlignRun)], notes: &mut Vec<String>) -> Option<AlignResult> {
    let usable = usable(runs, notes);
    if usable.is_empty() {
        return None;
    }
    let block = block_of(usable[0].1);
    let alone = alone(&usable, block, notes);
    let Together { per, sigma, est } = together(&alone);
    let mut v = align::fit_below(&est, block, second_largest(&est));
    let left_out = three_times_two_to_the_k(&est, block, &mut v);
    only_two_to_the_n(&est, &mut v);
    too_few_or_too_small(&est, &mut v);
    runs_disagree(&alone, &mut v, notes);
    unexplained_rows(&est, sigma, left_out, &mut v);
    if v.erase_p < CONFIDENT && v.erase.is_some() {
        let read = median(&per.iter().map(|p| p.2).collect::<Vec<_>>());
        notes.push(format!(
            "the -a rows vary by about {:.1} µs from one boundary to the next ({:.1}% of a {:.0} µs read): a step \
             below about {:.0} µs cannot be told from that; `flashbench -a --count=32` or `flashlab align` \
             reads each boundary more often",
            sigma / 1e3,
            100.0 * sigma / read.max(1.0),
            read / 1e3,
            3.0 * sigma / 1e3
        ));
    }
    Some(AlignResult {
        block_size: block,
        rows: rows_of(&usable, &per, &est, sigma),
        erase_size_bytes: v.erase,
        page_size_bytes: v.page,
        confidence: align::round3(v.erase_p),
        page_confidence: align::round3(v.page_p),
        evidence: v.evidence,
        references: Vec::new(),
        not_flash: None,
        claim: Default::default(),
    })
}

/// The runs of three rows or more; a note for each shorter one.
fn usable<'r, 'a>(runs: &'r [(&'a str, &'a AlignRun)], notes: &mut Vec<String>) -> Vec<&'r (&'a str, &'a AlignRun)> {
    runs.iter()
        .filter(|(name, r)| {
            let ok = r.rows.len() >= 3;
            if !ok && !r.rows.is_empty() {
                notes.push(format!(
                    "{name}:{}: an -a table of {} rows is too short to read and is left out",
                    r.rows[0].line,
                    r.rows.len()
                ));
            }
            ok
        })
        .collect()
}

/// Each run alone: its rows, its noise, its own verdict; notes for rows
/// missing at the bottom and for diffs printed without their unit.
fn alone(usable: &[&(&str, &AlignRun)], block: u64, notes: &mut Vec<String>) -> Vec<Alone> {
    let mut alone = Vec::new();
    let mut unitless = 0;
    let mut recomputed = 0;
    // (input, line) of each row with a unit flashbench's buffer cut.
    let (mut micro_cut, mut micro_times, mut no_unit) = (Vec::new(), 0, Vec::new());
    for (name, r) in usable {
        for x in &r.rows {
            if !x.micro_cut.is_empty() {
                micro_cut.push((*name, x.line));
                micro_times += x.micro_cut.len() as u64;
            }
            if x.diff != Diff::Printed {
                no_unit.push((*name, x.line));
            }
        }
        let rows: Vec<(u64, f64, f64)> = r
            .rows
            .iter()
            .map(|x| (x.boundary, x.diff_ns, (x.pre_ns + x.post_ns) / 2.0))
            .collect();
        unitless += r.rows.iter().filter(|x| x.diff == Diff::NoUnit).count();
        recomputed += r.rows.iter().filter(|x| x.diff == Diff::Recomputed).count();
        let sigma = row_noise(&rows);
        let est: Vec<Estimate> = rows.iter().map(|&(a, d, _)| (a, d, sigma)).collect();
        let v = align::fit_below(&est, block, second_largest(&est));
        let smallest = r.rows.iter().map(|x| x.boundary).min().unwrap_or(0);
        if r.invocation.is_some() && smallest > 2 * block_of(r) {
            notes.push(format!(
                "{name}:{}: the -a table stops at {} where flashbench prints down to {}: the rows below are missing",
                r.rows[0].line,
                Iec(smallest),
                Iec(2 * block_of(r))
            ));
        }
        alone.push(Alone {
            name: name.to_string(),
            line: r.rows[0].line,
            rows,
            sigma,
            verdict: v,
        });
    }
    if unitless + recomputed > 0 {
        notes.push(format!(
            "flashbench printed {} without a unit ({}): a negative time always takes its ns branch, whose \"ns\" \
             its 8-byte buffer cuts (bradfa/flashbench issue #16); read as nanoseconds{}; a negative diff means the \
             crossing read was faster than its neighbours, which is noise",
            crate::units::count((unitless + recomputed) as u64, "negative diff", "negative diffs"),
            rows_at(&no_unit),
            if recomputed > 0 {
                format!(", and {recomputed} that had lost digits taken from pre, on and post")
            } else {
                String::new()
            }
        ));
    }
    if !micro_cut.is_empty() {
        notes.push(format!(
            "flashbench printed {} as \"1e+03µ\" ({}): 1,000 µs to its three digits, whose \"s\" its 8-byte \
             buffer cuts (µ takes two bytes); read as 1,000 µs",
            crate::units::count(micro_times, "time", "times"),
            rows_at(&micro_cut)
        ));
    }
    alone
}

/// Where rows are, for a note: "a.txt line 3", "a.txt lines 3, 5, 8 and
/// 4 more" (an input named once for its run of rows).
fn rows_at(at: &[(&str, usize)]) -> String {
    const SHOWN: usize = 3;
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for &(name, line) in at.iter().take(SHOWN) {
        match groups.last_mut() {
            Some(g) if g.0 == name => g.1.push(line.to_string()),
            _ => groups.push((name, vec![line.to_string()])),
        }
    }
    let mut text = groups
        .iter()
        .map(|(name, lines)| {
            format!(
                "{name} line{} {}",
                if lines.len() == 1 { "" } else { "s" },
                lines.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    if at.len() > SHOWN {
        text += &format!(" and {} more", at.len() - SHOWN);
    }
    text
}

/// All runs together: each boundary's mean, its error from the noise
/// within runs and the spread between them.
fn together(alone: &[Alone]) -> Together {
    let mut boundaries: Vec<u64> = alone.iter().flat_map(|a| a.rows.iter().map(|r| r.0)).collect();
    boundaries.sort_unstable();
    boundaries.dedup();
    let within = median(&alone.iter().map(|a| a.sigma).collect::<Vec<_>>());
    let mut spreads = Vec::new();
    let mut per: Vec<(u64, Vec<f64>, f64)> = Vec::new();
    for &b in &boundaries {
        let vals: Vec<f64> = alone
            .iter()
            .filter_map(|a| a.rows.iter().find(|r| r.0 == b).map(|r| r.1))
            .collect();
        let reads: Vec<f64> = alone
            .iter()
            .filter_map(|a| a.rows.iter().find(|r| r.0 == b).map(|r| r.2))
            .collect();
        if vals.len() >= 2 {
            let mean = vals.iter().sum::<f64>() / vals.len() as f64;
            let var = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (vals.len() - 1) as f64;
            spreads.push(var);
        }
        per.push((b, vals, median(&reads)));
    }
    let between = if spreads.is_empty() {
        0.0
    } else {
        median(&spreads).sqrt()
    };
    let sigma = within.max(between);
    let est: Vec<Estimate> = per
        .iter()
        .map(|(b, vals, _)| {
            let mean = vals.iter().sum::<f64>() / vals.len() as f64;
            (*b, mean, sigma / (vals.len() as f64).sqrt())
        })
        .collect();
    Together { per, sigma, est }
}

/// The largest erase block a table can show: a level needs two rows, so
/// not its top row alone.
fn second_largest(est: &[Estimate]) -> u64 {
    let mut b: Vec<u64> = est.iter().map(|e| e.0).collect();
    b.sort_unstable();
    b.iter().rev().nth(1).copied().unwrap_or(0)
}

/// On a 3 x 2^k erase block, flashbench's 2^n rows from 2^k up carry 2/7
/// of its step (see [`three_times_two_to_the_k`]); rows carrying more than halfway from
/// that to all of it contradict the reading. On seed 25 of
/// `examples/flashbench_import.rs`, one -a run of a 1 MiB-AU card read
/// its 3 and 12 MiB rows 12 µs high, its 2^n rows from 1 MiB up carried
/// 86% of the step, and alone it said 3 MiB at 1.00.
const TWOS_SHARE_MAX: f64 = (1.0 + 2.0 / 7.0) / 2.0;

/// A 3 x 2^k erase block: its page read without the 2^n rows it explains,
/// and unsure where those rows carry most of its step. Returns the 2^n
/// rows' start (they are left out of the page) where it applies.
fn three_times_two_to_the_k(est: &[Estimate], block: u64, v: &mut Verdict) -> Option<u64> {
    let mut extra = Vec::new();
    let mut contradicted = false;
    // The 2^n rows a 3 x 2^k erase block's 2/7 explains, from this up.
    let mut left_out = None;
    // flashbench reads a 2^n boundary a at a x (1 + i x max/a), i = 0..6:
    // on a 3 x 2^k erase block, 2 of those 7 positions (i = 1, 4 or 2, 5)
    // are erase-block boundaries for every a >= 2^k, so those rows carry
    // 2/7 of its step and pass for a page. The page is read without them.
    if let Some(e) = v.erase.filter(|e| !e.is_power_of_two()) {
        let low = e / 3;
        let clean: Vec<Estimate> = est
            .iter()
            .copied()
            .filter(|r| !(r.0.is_power_of_two() && r.0 >= low))
            .collect();
        let w = align::fit_below(&clean, block, second_largest(&clean));
        if w.erase == v.erase {
            extra.push(format!(
                "the 2^n rows from {} up are left out of the page: 2 of flashbench's 7 reads of each sit on a {} \
                 erase-block boundary",
                Iec(low),
                Iec(e)
            ));
            // ... so they carry about 2/7 of its step. Rows that carry
            // most of it say the erase block divides 2^n: a 3 x 2^k
            // reading then rests on a few 3 x 2^n rows reading high.
            let twos: Vec<f64> = est
                .iter()
                .filter(|r| r.0.is_power_of_two() && r.0 >= low)
                .map(|r| r.1)
                .collect();
            let base = if w.page.is_some() { w.levels[1] } else { w.levels[0] };
            if !twos.is_empty() && w.levels[2] > base {
                let share = (twos.iter().sum::<f64>() / twos.len() as f64 - base) / (w.levels[2] - base);
                if share > TWOS_SHARE_MAX {
                    extra.push(format!(
                        "but those rows carry {:.0}% of the step, not the 2/7 a {} erase block gives them: an erase \
                         block of {} or a divisor of it reads the same, so the size is unsure",
                        100.0 * share,
                        Iec(e),
                        Iec(low)
                    ));
                    contradicted = true;
                }
            }
            left_out = Some(low);
            *v = w;
        }
    }
    if contradicted {
        v.erase_p = v.erase_p.min(DISPUTED);
    }
    v.evidence.extend(extra);
    left_out
}

/// Without 3 x 2^n rows, a 3 x 2^k erase block shows as 2/7 of its step
/// at 2^k: a 2^k erase block with a smaller step looks the same.
fn only_two_to_the_n(est: &[Estimate], v: &mut Verdict) {
    let threes = est.iter().any(|r| !r.0.is_power_of_two());
    if !threes && v.erase.is_some() && v.erase_p > DISPUTED {
        v.erase_p = DISPUTED;
        v.evidence.push(format!(
            "flashbench -a tries only 2^n boundaries: an erase block of 3 x {} would show the same step, smaller, \
             at {} (SD allows AUs of 12 and 24 MiB), so the size is unsure; `flashlab align` tries both",
            Iec(v.erase.unwrap_or(0)),
            Iec(v.erase.unwrap_or(0))
        ));
    }
}

/// Rows (boundaries at multiples of it) an erase block's step must show in
/// before it may be confident.
const MIN_BEARING: usize = 3;
/// ... unless its step is this many standard errors of a row: a tiny card
/// has few boundaries above a large erase block, and a plain step there is
/// still plain.
const PLAIN_STEP: f64 = 10.0;
/// An erase block's step smaller than this many standard errors of a row
/// is unsure however many rows bear it: a run's rows drift together by a
/// row's scatter or two over a stretch of boundaries. On seed 24 of
/// `examples/flashbench_import.rs`, one of three -a runs of a 1 MiB-AU
/// card read its six rows from 8 MiB up 2.7 µs above the rest (a row's
/// standard error: 1.6 µs, align's floor of 0.2% of its 822 µs read; the
/// rows' own scatter, 1.5 µs), and alone said an 8 MiB erase block at 0.9.
const SMALL_STEP: f64 = 3.0;

/// A step borne by two rows is two rows of noise away from none: on
/// seed 13 of `examples/flashbench_import.rs`, a 1 MiB-AU card's 16 and
/// 32 MiB rows read 5 µs high in one of three runs (row noise 2 µs), and
/// that run alone said 16 MiB at confidence 0.9 or more.
fn too_few_or_too_small(est: &[Estimate], v: &mut Verdict) {
    let Some(e) = v.erase else {
        return;
    };
    let bearing = est.iter().filter(|r| r.0 >= e && r.0 % e == 0).count();
    let below = if v.page.is_some() { v.levels[1] } else { v.levels[0] };
    let step = v.levels[2] - below;
    let se = est.iter().map(|r| r.2).fold(0.0, f64::max);
    // Rows at multiples of it that read above halfway up its step: one
    // alone is no level, however high (a table's top row can read far
    // above the rest, and a candidate just below it takes its jump).
    let carrying = est
        .iter()
        .filter(|r| r.0 >= e && r.0 % e == 0 && r.1 >= below + step / 2.0)
        .count();
    let few = carrying < 2 || (bearing < MIN_BEARING && step < PLAIN_STEP * se);
    let bearing = if carrying < 2 { carrying } else { bearing };
    let small = step < SMALL_STEP * se;
    // If that step is noise, the page's step below it is the erase
    // block's (a lone step is read as the erase block): the page is no
    // surer than the erase block then. A real 1 MiB-AU card emulated
    // behind at91-mci, read by Debian's flashbench (the 64 MiB row read
    // twice the rest in three runs), said "page 1 MiB" at 0.97 on an
    // unsure 32 MiB erase block.
    let page_too = v.page.filter(|_| (few || small) && v.page_p > DISPUTED);
    if (few || small) && (v.erase_p > DISPUTED || page_too.is_some()) {
        v.evidence.push(if few {
            format!(
                "only {bearing} row{} at multiples of {} {} its step: too few to tell it from noise, so the \
                 size is unsure",
                if bearing == 1 { "" } else { "s" },
                Iec(e),
                if bearing == 1 { "carries" } else { "carry" }
            )
        } else {
            format!(
                "its step ({:.1} µs) is under {SMALL_STEP} times a row's scatter ({:.1} µs): a few rows reading \
                 high by chance look the same, so the size is unsure",
                step / 1e3,
                se / 1e3
            )
        });
        v.erase_p = v.erase_p.min(DISPUTED);
    }
    if let Some(p) = page_too {
        v.page_p = DISPUTED;
        v.evidence.push(format!(
            "if that step is noise, the {} step is the erase block's: the page is unsure too",
            Iec(p)
        ));
    }
}

/// Runs that disagree: one answer, unsure, and which said what.
fn runs_disagree(alone: &[Alone], v: &mut Verdict, notes: &mut Vec<String>) {
    if alone.len() <= 1 {
        return;
    }
    for (what, pick) in [("erase block", 0usize), ("page", 1)] {
        let said: Vec<(String, usize, Option<u64>)> = alone
            .iter()
            .map(|a| {
                (
                    a.name.clone(),
                    a.line,
                    if pick == 0 { a.verdict.erase } else { a.verdict.page },
                )
            })
            .collect();
        let mut distinct: Vec<Option<u64>> = said.iter().map(|s| s.2).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() > 1 {
            let list: Vec<String> = said
                .iter()
                .map(|(n, l, s)| format!("{n}:{l} {}", s.map_or("none".to_string(), |b| Iec(b).to_string())))
                .collect();
            notes.push(format!(
                "the {} -a runs disagree on the {what} ({}): judged together, and unsure",
                alone.len(),
                list.join(", ")
            ));
            if pick == 0 {
                v.erase_p = v.erase_p.min(DISPUTED);
            } else {
                v.page_p = v.page_p.min(DISPUTED);
            }
        }
    }
}

/// A row further from its fitted level than this many standard errors is
/// one the page/erase-block model does not explain.
const UNEXPLAINED_SE: f64 = 4.0;
/// ...and lies at least this share of a step away from both levels around it.
const INTERMEDIATE: f64 = 0.2;

/// Rows the model leaves unexplained make the size they bear on unsure.
fn unexplained_rows(est: &[Estimate], sigma: f64, left_out: Option<u64>, v: &mut Verdict) {
    let mut present = vec![v.levels[0]];
    if v.page.is_some() {
        present.push(v.levels[1]);
    }
    if v.erase.is_some() {
        present.push(v.levels[2]);
    }
    present.sort_by(f64::total_cmp);
    for &(a, m, se) in est
        .iter()
        .filter(|r| !left_out.is_some_and(|low| r.0.is_power_of_two() && r.0 >= low))
    {
        let l = align::level_of(v.page, v.erase, a);
        let off = m - v.levels[l];
        // Between two levels, well clear of both: a level of its own.
        let between = present.windows(2).any(|w| {
            let f = (m - w[0]) / (w[1] - w[0]);
            (INTERMEDIATE..=1.0 - INTERMEDIATE).contains(&f)
        });
        if !between || off.abs() <= UNEXPLAINED_SE * se.max(sigma / 4.0) {
            continue;
        }
        let line = format!(
            "the {} row ({:.1} µs) lies {:.1} µs from the level the verdict gives it: a step the page and \
             erase-block model does not explain (pages read in pairs, a second buffer, or noise)",
            Iec(a),
            m / 1e3,
            off.abs() / 1e3
        );
        let near_erase = v.erase.is_some_and(|e| a >= e / 4 && a <= e.saturating_mul(4));
        if v.erase.is_none_or(|e| a < e) && v.page_p > DISPUTED {
            v.page_p = DISPUTED;
            v.evidence.push(format!("{line}; the page size is unsure"));
        } else if near_erase && v.erase_p > DISPUTED {
            v.erase_p = DISPUTED;
            v.evidence.push(format!("{line}; the erase block is unsure"));
        }
    }
}

/// The table of the result: each boundary's median pre, on and post over
/// the runs and its mean diff, largest boundary first.
fn rows_of(
    usable: &[&(&str, &AlignRun)],
    per: &[(u64, Vec<f64>, f64)],
    est: &[Estimate],
    sigma: f64,
) -> Vec<align::Row> {
    let mut rows: Vec<align::Row> = per
        .iter()
        .zip(est)
        .map(|((b, vals, _), e)| {
            let pick = |f: fn(&AlignRow) -> f64| -> f64 {
                let v: Vec<f64> = usable
                    .iter()
                    .filter_map(|(_, r)| r.rows.iter().find(|x| x.boundary == *b).map(f))
                    .collect();
                median(&v)
            };
            align::Row {
                boundary_bytes: *b,
                pre_ns: pick(|x| x.pre_ns),
                on_ns: pick(|x| x.on_ns),
                post_ns: pick(|x| x.post_ns),
                diff_ns: e.1,
                diff_spread_ns: if vals.len() > 1 { 2.0 * 0.6745 * sigma } else { 0.0 },
                samples: vals.len(),
            }
        })
        .collect();
    rows.reverse();
    rows
}
