//! `fat`: how many leading AUs tolerate small random writes (the FAT-optimised
//! area, flashbench --find-fat's question, seed 004).
//!
//! flashbench writes each leading AU in order and leaves the reading to the
//! user. Here each candidate AU gets the same few page-sized writes in LFSR
//! order, and so does a reference AU past them: a FAT-area AU takes them at
//! program cost, an ordinary one needs a random-mode log (extra cost per write,
//! merges once those run out). The area is the run of leading AUs clearly faster
//! than the reference.

use serde::{Deserialize, Serialize};

use super::{MeasureError, median};
use crate::patterns::lfsr_positions;
use crate::safety::ranges::Range;
use crate::seam::{AlignedBuf, Request, Target, run_all};

/// The fastest AU must beat the reference by this fraction for any AU to
/// count as FAT area (jitter of the medians is about 1%); AUs are then split at
/// the midpoint between the fastest and the reference (and four standard
/// errors of the two medians). On the built-in cards a
/// FAT AU takes 0.50 (kingston-sa04g) to 0.73 (demo) of the reference's time;
/// with 64 KiB pages the transfer narrows that to about 0.87.
const SEPARATION: f64 = 0.01;
/// Most leading AUs examined. A FAT area holds the filesystem's metadata:
/// seed 004's cards show 0 to 2 AUs; a few dozen would be a whole partition.
pub const MAX_AUS: u64 = 256;
/// Writes per AU: enough for a stable median, few enough to be cheap.
const WRITES: u64 = 32;

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub erase: u64,
    pub chunk: u64,
    /// Leading AUs examined.
    pub max_aus: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuRow {
    pub au: u64,
    pub median_ns: f64,
    pub bytes_per_sec: f64,
    /// Faster than the split in both passes.
    pub fast: bool,
    /// Counted in the FAT area: fast, and every AU before it fast too.
    #[serde(default)]
    pub in_area: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FatResult {
    /// Why this target cannot show flash behaviour; then no area is claimed.
    #[serde(default)]
    pub not_flash: Option<String>,
    pub erase_size_bytes: u64,
    pub fat_area_aus: u64,
    /// How sure the area (or "no area") is: both passes must agree and the
    /// fast AUs must stand clear of the reference.
    #[serde(default)]
    pub confidence: f64,
    pub chunk_bytes: u64,
    /// The ordinary AU every candidate is compared with.
    pub reference_au: u64,
    pub reference_median_ns: f64,
    pub aus: Vec<AuRow>,
}

/// One page per write (16 KiB when the page is unknown), at least a block, at
/// most half an AU: a multi-page write dilutes the per-write random cost.
pub fn default_chunk(erase: u64, page: Option<u64>, block: u64) -> u64 {
    let c = page.unwrap_or(16 << 10).max(block).min(erase / 2);
    // Whole blocks: half of a 3 x 2^n erase block need not be one.
    (c / block.max(1)).max(1) * block.max(1)
}

fn reference_au(o: &Options) -> u64 {
    o.max_aus + 2
}

/// Byte offsets written in AU `au`: the same LFSR-chosen chunks in each.
fn offsets(o: &Options, au: u64) -> Vec<u64> {
    let num = o.erase / o.chunk;
    lfsr_positions(num)
        .into_iter()
        .take(WRITES.min(num) as usize)
        .map(|p| au * o.erase + p * o.chunk)
        .collect()
}

/// The AU written in order, as many chunks as [`offsets`]: what the same
/// writes cost without the random-order penalty a FAT area is spared.
fn in_order_au(o: &Options) -> u64 {
    reference_au(o) + 1
}

fn in_order_offsets(o: &Options) -> Vec<u64> {
    let au = in_order_au(o);
    (0..WRITES.min(o.erase / o.chunk))
        .map(|k| au * o.erase + k * o.chunk)
        .collect()
}

/// The chunks the test writes, declared up front (just the chunks, so a real
/// card's journal stays small).
pub fn plan(size: u64, o: &Options) -> Result<Vec<Range>, MeasureError> {
    super::check_plan(o.erase, o.chunk, o.max_aus, MAX_AUS)?;
    // Bounded by check_plan: at most 260 AUs of 1 GiB.
    let need = (in_order_au(o) + 1) * o.erase;
    if need > size {
        return Err(MeasureError::DoesNotFit {
            what: format!("fat with --max {}", o.max_aus),
            from: 0,
            need,
            size,
            fix: "use a smaller --max (or --erase-size), or a larger target".into(),
        });
    }
    Ok((0..o.max_aus)
        .chain([reference_au(o)])
        .flat_map(|au| offsets(o, au))
        .chain(in_order_offsets(o))
        .map(|offset| Range { offset, len: o.chunk })
        .collect())
}

/// Median latency of the test's writes in one AU, and its standard error
/// (from the robust spread, so an outlier write moves neither).
fn probe(t: &mut dyn Target, o: &Options, au: u64, buf: &mut AlignedBuf) -> Result<(f64, f64), MeasureError> {
    timed(t, o, offsets(o, au), buf)
}

fn timed(t: &mut dyn Target, o: &Options, at: Vec<u64>, buf: &mut AlignedBuf) -> Result<(f64, f64), MeasureError> {
    let reqs: Vec<Request> = at
        .into_iter()
        .map(|off| Request::write(off, o.chunk as u32, 0))
        .collect();
    let done = run_all(t, &reqs, 1, buf)?;
    let lat: Vec<f64> = done.iter().map(|c| c.duration_ns as f64).collect();
    let se = 1.2533 * super::robust_sigma(&lat) / (lat.len().max(1) as f64).sqrt();
    Ok((median(&lat), se))
}

pub struct Fat {
    pub options: Options,
    pub medium: super::Medium,
}

impl super::Test for Fat {
    const KEY: &'static str = "fat";
    type Output = FatResult;
    fn plan(&self, d: &crate::seam::TargetDescription) -> Result<Vec<Range>, MeasureError> {
        super::check_blocks(self.options.erase, self.options.chunk, d)?;
        plan(d.size_bytes, &self.options)
    }
    fn run(&self, t: &mut dyn Target) -> Result<FatResult, MeasureError> {
        let mut r = run(t, self.options)?;
        if let Some(why) = &self.medium.not_flash {
            r.fat_area_aus = 0;
            r.confidence = 1.0;
            for a in &mut r.aus {
                a.in_area = false;
            }
            r.not_flash = Some(why.clone());
        }
        Ok(r)
    }
}

pub fn run(t: &mut dyn Target, o: Options) -> Result<FatResult, MeasureError> {
    let mut buf = AlignedBuf::new(o.chunk as usize);
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i.wrapping_mul(131) % 251) as u8;
    }
    // Two passes, the reference measured in each: a FAT area is claimed only
    // where both put it (a pause or an outlier in one pass moves nothing).
    let mut passes = Vec::new();
    for _ in 0..2 {
        let reference = probe(t, &o, reference_au(&o), &mut buf)?;
        let medians: Vec<(f64, f64)> = (0..o.max_aus)
            .map(|au| probe(t, &o, au, &mut buf))
            .collect::<Result<_, _>>()?;
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
    let in_order = timed(t, &o, in_order_offsets(&o), &mut buf)?;
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
    Ok(FatResult {
        not_flash: None,
        confidence,
        erase_size_bytes: o.erase,
        fat_area_aus,
        chunk_bytes: o.chunk,
        reference_au: reference_au(&o),
        reference_median_ns: reference,
        aus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::sim::profiles::{PROFILES, build};

    #[test]
    fn every_built_in_profile_gives_its_fat_area() {
        for prof in PROFILES {
            let params = build(prof.name).unwrap();
            let o = Options {
                erase: params.au_size,
                chunk: default_chunk(params.au_size, Some(params.page_size), 512),
                max_aus: 8,
            };
            let want = if params.page_mapped { 0 } else { params.fat_area_aus };
            let mut runner = crate::run::runner::Runner::for_sim("fat", SimTarget::new(prof.name, params));
            let r = runner
                .run(&Fat {
                    options: o,
                    medium: Default::default(),
                })
                .unwrap();
            assert_eq!(r.fat_area_aus, want, "{}: {:#?}", prof.name, r.aus);
        }
    }
}
