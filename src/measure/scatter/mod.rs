//! `scatter`: the read latency of every block of a region, in order (flashbench
//! -s's map). Page and AU boundaries show as periodic spikes; the report issue
//! plots it.

mod command;
mod show;

pub use command::Args;
pub use show::Presenter;

use serde::{Deserialize, Serialize};

use super::{Cx, MeasureError};
use crate::targets::Request;

/// Reads per batch: bounds memory for the request list, not the result.
const BATCH: u64 = 4096;
/// Most points kept (16 bytes each, 64 MiB): a map of a whole card at 4 KiB
/// is millions of points no plot can show.
pub const MAX_POINTS: u64 = 1 << 22;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub offset: u64,
    pub latency_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScatterResult {
    pub offset_bytes: u64,
    pub length_bytes: u64,
    pub block_size: u64,
    pub points: Vec<Point>,
}

/// Nothing to derive: a result read back is shown as stored.
impl crate::measure::registry::Settle for ScatterResult {}

/// scatter as a [`super::Test`]: read-only; the read size defaults to 4 KiB
/// or the logical block, whichever is larger.
#[derive(Debug, Clone, Copy)]
pub struct Scatter {
    pub offset: u64,
    pub length: u64,
    pub block: Option<u64>,
}

impl super::Test for Scatter {
    const KEY: &'static str = "scatter";
    type Output = ScatterResult;
    fn plan(&self, _: &crate::targets::TargetDescription) -> Result<Vec<crate::safety::ranges::Range>, MeasureError> {
        Ok(Vec::new())
    }
    fn run(&self, cx: &mut Cx<'_>) -> Result<ScatterResult, MeasureError> {
        let block = self
            .block
            .unwrap_or_else(|| u64::from(cx.target.description().logical_block_size).max(4096));
        run(cx, self.offset, self.length, block)
    }
    fn record(out: &ScatterResult, results: &mut super::Results) {
        results.scatter.set(out.clone());
    }
}

pub fn run(cx: &mut Cx<'_>, offset: u64, length: u64, block: u64) -> Result<ScatterResult, MeasureError> {
    let d = cx.target.description();
    let lb = u64::from(d.logical_block_size);
    let len = super::request_len(block, "--block")?;
    if block == 0 || !block.is_multiple_of(lb) || !offset.is_multiple_of(lb) || length < block {
        return Err(MeasureError::Bad {
            why: format!(
                "offset, length and block must be multiples of the {lb}-byte logical block, length at least one block"
            ),
            fix: format!("give --offset, --length and --block as multiples of {lb} bytes"),
        });
    }
    let size = d.size_bytes;
    if offset.checked_add(length).is_none_or(|e| e > size) {
        return Err(MeasureError::DoesNotFit {
            what: "scatter".into(),
            from: offset,
            need: length,
            size,
            fix: format!("choose --offset and --length that end within the target's {size} bytes"),
        });
    }
    let count = length / block;
    if count > MAX_POINTS {
        return Err(MeasureError::Bad {
            why: format!("{count} reads of {block} bytes is more than the {MAX_POINTS} scatter keeps"),
            fix: "use a larger --block or a shorter --length".into(),
        });
    }
    let mut buf = super::buffer(block)?;
    let mut points = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut i = 0;
    while i < count {
        let n = (count - i).min(BATCH);
        let reqs: Vec<Request> = (i..i + n).map(|k| Request::read(offset + k * block, len, 0)).collect();
        cx.check()?;
        let done = crate::targets::run_all(cx.target, &reqs, 1, &mut buf)?;
        cx.progress.advance(i + n, count);
        for (r, c) in reqs.iter().zip(done) {
            points.push(Point {
                offset: r.offset,
                latency_ns: c.duration_ns,
            });
        }
        i += n;
    }
    Ok(ScatterResult {
        offset_bytes: offset,
        length_bytes: count * block,
        block_size: block,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::sim::profiles::build;

    fn scatter(t: &mut SimTarget, offset: u64, length: u64, block: u64) -> Result<ScatterResult, MeasureError> {
        let s = Scatter {
            offset,
            length,
            block: Some(block),
        };
        crate::measure::run_alone(&s, t)
    }

    #[test]
    fn scatter_reads_every_block_in_order_and_stays_inside() {
        let mut t = SimTarget::new("sim:kingston-sa04g", build("kingston-sa04g").unwrap());
        let r = scatter(&mut t, 0, 1 << 20, 4096).unwrap();
        assert_eq!(r.points.len(), 256);
        assert!(r.points.windows(2).all(|w| w[1].offset == w[0].offset + 4096));
        // The first read is a random access (kingston: 699 us more); the rest
        // continue in order: those starting a 16 KiB page load it (580 us),
        // the others find it in the page register. The plot shows the page.
        assert!(r.points[0].latency_ns >= r.points[4].latency_ns + 699_000);
        let (starts, inside): (Vec<_>, Vec<_>) = r.points[1..].iter().partition(|p| p.offset % (16 << 10) == 0);
        assert_eq!(starts.len(), 63);
        assert!(starts.iter().all(|p| p.latency_ns == starts[0].latency_ns));
        assert!(inside.iter().all(|p| p.latency_ns == inside[0].latency_ns));
        assert_eq!(starts[0].latency_ns - inside[0].latency_ns, 580_000);
        use crate::measure::registry::Registered;
        assert_eq!(Presenter::csv(&r).unwrap().lines().count(), 257);
        let size = crate::targets::Target::description(&t).size_bytes;
        assert!(scatter(&mut t, size - 4096, 8192, 4096).is_err());
        assert!(scatter(&mut t, 0, 8192, 1000).is_err());
    }
}
