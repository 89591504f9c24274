//! flashbench's `--find-fat` columns judged by the AUs that stand apart
//! from the back half of the table.

use super::super::parse::{RateRow, RateRun};
use crate::measure::fat::{AuRow, FatResult, Method};
use crate::measure::median;

/// find-fat: an AU this much faster at small chunks than the back half of
/// the table is of another kind.
const FAST: f64 = 1.5;

pub(super) fn judge_fat(runs: &[(&str, &RateRun)], notes: &mut Vec<String>) -> Option<FatResult> {
    let (name, run) = runs.iter().max_by_key(|(_, r)| r.rows.len())?;
    let n = run.rows.iter().map(|r| r.rates.len()).min().unwrap_or(0);
    if n < 2 || run.rows.is_empty() {
        return None;
    }
    if runs.len() > 1 {
        notes.push(format!(
            "{} --find-fat tables: the longest ({name}:{}) is judged",
            runs.len(),
            run.rows[0].line
        ));
    }
    let erase = run
        .invocation
        .as_ref()
        .and_then(|i| i.erasesize)
        .unwrap_or(run.rows[0].chunk);
    let small: Vec<&RateRow> = run.rows.iter().filter(|r| r.chunk <= erase / 8).collect();
    let rows: Vec<&RateRow> = if small.len() >= 2 {
        small
    } else {
        run.rows.iter().collect()
    };
    let back = n / 2;
    // Each AU against the median of the back half, row by row.
    let score = |i: usize| -> f64 {
        let v: Vec<f64> = rows
            .iter()
            .filter_map(|r| {
                let reference: Vec<f64> = r.rates[back..n].iter().flatten().copied().collect();
                Some(r.rates[i]? / median(&reference).max(f64::MIN_POSITIVE))
            })
            .collect();
        median(&v)
    };
    let scores: Vec<f64> = (0..n).map(score).collect();
    let area = scores.iter().take_while(|&&s| s >= FAST).count() as u64;
    let smallest = rows.last().map_or(0, |r| r.chunk);
    let last = rows.last();
    let rate_at = |i: usize| last.and_then(|r| r.rates[i]).unwrap_or(0.0);
    let mut fat_notes = Vec::new();
    let confidence = if area as usize >= back {
        fat_notes.push(format!(
            "the first {area} of {n} AUs write faster: the area may be larger than find-fat's table; \
             --fat-nr={} shows more",
            2 * n
        ));
        0.3
    } else if area > 0 {
        0.7
    } else {
        fat_notes.push(
            "no AU writes faster than the others in find-fat's ordered writes; a FAT area that differs only in \
             random writes does not show there (`flashlab fat` measures those)"
                .into(),
        );
        0.5
    };
    let reference = rate_at(back);
    Some(FatResult {
        not_flash: None,
        claim: Default::default(),
        erase_size_bytes: erase,
        fat_area_aus: area,
        confidence,
        chunk_bytes: smallest,
        reference_au: back as u64,
        reference_median_ns: if reference > 0.0 {
            smallest as f64 * 1e9 / reference
        } else {
            0.0
        },
        aus: (0..n)
            .map(|i| AuRow {
                au: i as u64,
                median_ns: if rate_at(i) > 0.0 {
                    smallest as f64 * 1e9 / rate_at(i)
                } else {
                    0.0
                },
                bytes_per_sec: rate_at(i),
                fast: scores[i] >= FAST,
                in_area: (i as u64) < area,
                merging: None,
            })
            .collect(),
        method: Method::FindFat,
        random_aus: None,
        fits_ns: None,
        overflows_ns: None,
        notes: fat_notes,
    })
}
