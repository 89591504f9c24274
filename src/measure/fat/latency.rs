//! The latency method: each leading AU's median random-write latency against
//! an ordinary reference AU's (see the parent module).

use super::{AuRow, FatResult, Method, Options, in_order_offsets, offsets, reference_au};
use crate::measure::{MeasureError, median};
use crate::targets::Target;

/// The fastest AU must beat the reference by this fraction for any AU to
/// count as FAT area (jitter of the medians is about 1%); AUs are then split at
/// the midpoint between the fastest and the reference (and four standard
/// errors of the two medians). On the built-in cards a
/// FAT AU takes 0.50 (kingston-sa04g) to 0.73 (demo) of the reference's time;
/// with 64 KiB pages the transfer narrows that to about 0.87.
const SEPARATION: f64 = 0.01;
/// Median latency of the test's writes in one AU, and its standard error
/// (from the robust spread, so an outlier write moves neither).
fn probe(t: &mut dyn Target, o: &Options, au: u64) -> Result<(f64, f64), MeasureError> {
    timed(t, o, offsets(o, au))
}

/// Each chunk written with its own bytes ([`crate::measure::rewrite`]).
fn timed(t: &mut dyn Target, o: &Options, at: Vec<u64>) -> Result<(f64, f64), MeasureError> {
    let lat = crate::measure::rewrite(t, &at, o.chunk)?;
    let se = 1.2533 * crate::measure::robust_sigma(&lat) / (lat.len().max(1) as f64).sqrt();
    Ok((median(&lat), se))
}

/// The latency method (module documentation).
/// `Err` carries the device-seconds spent when the step's budget (`until`,
/// a device time in ns) ended it first.
pub(super) fn latency(t: &mut dyn Target, o: Options, until: u64) -> Result<Result<FatResult, f64>, MeasureError> {
    // Two passes, the reference measured in each: a FAT area is claimed only
    // where both put it (a pause or an outlier in one pass moves nothing).
    let mut passes = Vec::new();
    for _ in 0..2 {
        let reference = probe(t, &o, reference_au(&o))?;
        let mut medians: Vec<(f64, f64)> = Vec::new();
        for au in 0..o.max_aus {
            if t.device_time_ns() >= until {
                return Ok(Err(t.device_time_ns() as f64 / 1e9));
            }
            medians.push(probe(t, &o, au)?);
        }
        passes.push((reference, medians));
    }
    // An AU is fast when the fastest stands clear of the reference by four
    // standard errors and by SEPARATION of the reference (a slow host adds
    // the same transfer time to both, so the gap can be small in relation
    // but still certain); the split is their midpoint.
    let gap_needed = |(reference, medians): &((f64, f64), Vec<(f64, f64)>)| -> (f64, f64) {
        let fastest = medians
            .iter()
            .copied()
            .fold((f64::INFINITY, 0.0), |a, m| if m.0 < a.0 { m } else { a });
        (
            fastest.0,
            (4.0 * reference.1.hypot(fastest.1)).max(SEPARATION * reference.0),
        )
    };
    let classify = |pass: &((f64, f64), Vec<(f64, f64)>)| -> Vec<bool> {
        let (fastest, needed) = gap_needed(pass);
        let reference = pass.0.0;
        let split = (reference - fastest > needed).then_some((fastest + reference) / 2.0);
        pass.1.iter().map(|&(m, _)| split.is_some_and(|s| m < s)).collect()
    };
    let (a, b) = (classify(&passes[0]), classify(&passes[1]));
    let area = |f: &[bool]| f.iter().take_while(|x| **x).count() as u64;
    // How sure "no area" can be. A FAT area is where random-order writes
    // cost what in-order ones do; if in the reference AU they already cost
    // the same (the host's own time hides the card's penalty), an area
    // could not show at all and "none" is a guess. Otherwise as sure as the
    // random-order penalty stands clear of the noise.
    let in_order = timed(t, &o, in_order_offsets(&o))?;
    let none_sure = {
        let (reference, se) = passes[0].0;
        let penalty = reference - in_order.0;
        let noise = 4.0 * se.hypot(in_order.1);
        if penalty <= noise.max(SEPARATION * reference) {
            0.3 / 0.95
        } else {
            (penalty / (2.0 * noise.max(1.0))).min(1.0)
        }
    };
    let ((reference, _), medians) = &passes[0];
    let medians: Vec<f64> = medians.iter().map(|m| m.0).collect();
    let fat_area_aus = area(&a).min(area(&b));
    let agree = area(&a) == area(&b);
    let aus: Vec<AuRow> = medians
        .iter()
        .enumerate()
        .map(|(au, &m)| AuRow {
            au: au as u64,
            median_ns: m,
            bytes_per_sec: o.chunk as f64 * 1e9 / m.max(1.0),
            fast: a[au] && b[au],
            in_area: (au as u64) < fat_area_aus,
            merging: None,
        })
        .collect();
    // Fast AUs past the area (not leading) are something else (a cache, a
    // pause in the reference): they make "this many" less sure.
    let stray = aus.iter().any(|r| r.fast && !r.in_area);
    let confidence = match (agree, stray) {
        (true, false) if fat_area_aus == 0 => 0.95 * none_sure,
        (true, false) => 0.95,
        (true, true) => 0.7,
        // One pass saw what the other did not: less than a coin flip (on
        // generated cards such answers are right about one time in ten).
        (false, _) => 0.3,
    };
    let reference = *reference;
    Ok(Ok(FatResult {
        not_flash: None,
        claim: crate::measure::claim::Claim::made(),
        confidence,
        erase_size_bytes: o.erase,
        fat_area_aus,
        chunk_bytes: o.chunk,
        reference_au: reference_au(&o),
        reference_median_ns: reference,
        aus,
        method: Method::Latency,
        random_aus: None,
        fits_ns: None,
        overflows_ns: None,
        notes: Vec::new(),
    }))
}
