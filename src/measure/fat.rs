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
/// the midpoint between the fastest and the reference. On the built-in cards a
/// FAT AU takes 0.50 (kingston-sa04g) to 0.73 (demo) of the reference's time;
/// with 64 KiB pages the transfer narrows that to about 0.87.
const SEPARATION: f64 = 0.05;
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
    pub fast: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FatResult {
    pub erase_size_bytes: u64,
    pub fat_area_aus: u64,
    pub chunk_bytes: u64,
    /// The ordinary AU every candidate is compared with.
    pub reference_au: u64,
    pub reference_median_ns: f64,
    pub aus: Vec<AuRow>,
}

/// One page per write (16 KiB when the page is unknown), at least a block, at
/// most half an AU: a multi-page write dilutes the per-write random cost.
pub fn default_chunk(erase: u64, page: Option<u64>, block: u64) -> u64 {
    page.unwrap_or(16 << 10).max(block).min(erase / 2)
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
        .map(|p| au * o.erase + (p - 1) * o.chunk)
        .collect()
}

/// The chunks the test writes, declared up front (just the chunks, so a real
/// card's journal stays small).
pub fn plan(size: u64, o: &Options) -> Result<Vec<Range>, MeasureError> {
    super::check_plan(o.erase, o.chunk, o.max_aus, MAX_AUS)?;
    // Bounded by check_plan: at most 259 AUs of 1 GiB.
    let need = (reference_au(o) + 1) * o.erase;
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
        .map(|offset| Range { offset, len: o.chunk })
        .collect())
}

/// Median latency of the test's writes in one AU.
fn probe(t: &mut dyn Target, o: &Options, au: u64, buf: &mut AlignedBuf) -> Result<f64, MeasureError> {
    let reqs: Vec<Request> = offsets(o, au)
        .into_iter()
        .map(|off| Request::write(off, o.chunk as u32, 0))
        .collect();
    let done = run_all(t, &reqs, 1, buf)?;
    Ok(median(&done.iter().map(|c| c.duration_ns as f64).collect::<Vec<_>>()))
}

impl super::Test for Options {
    const KEY: &'static str = "fat";
    type Output = FatResult;
    fn plan(&self, d: &crate::seam::TargetDescription) -> Result<Vec<Range>, MeasureError> {
        plan(d.size_bytes, self)
    }
    fn run(&self, t: &mut dyn Target) -> Result<FatResult, MeasureError> {
        run(t, *self)
    }
}

pub fn run(t: &mut dyn Target, o: Options) -> Result<FatResult, MeasureError> {
    let mut buf = AlignedBuf::new(o.chunk as usize);
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i.wrapping_mul(131) % 251) as u8;
    }
    let reference = probe(t, &o, reference_au(&o), &mut buf)?;
    let medians: Vec<f64> = (0..o.max_aus)
        .map(|au| probe(t, &o, au, &mut buf))
        .collect::<Result<_, _>>()?;
    let fastest = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let split = (fastest < (1.0 - SEPARATION) * reference).then_some((fastest + reference) / 2.0);
    let aus: Vec<AuRow> = medians
        .iter()
        .enumerate()
        .map(|(au, &m)| AuRow {
            au: au as u64,
            median_ns: m,
            bytes_per_sec: o.chunk as f64 * 1e9 / m.max(1.0),
            fast: split.is_some_and(|s| m < s),
        })
        .collect();
    let fat_area_aus = aus.iter().take_while(|r| r.fast).count() as u64;
    Ok(FatResult {
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
            let r = runner.run(&o).unwrap();
            assert_eq!(r.fat_area_aus, want, "{}: {:#?}", prof.name, r.aus);
        }
    }
}
