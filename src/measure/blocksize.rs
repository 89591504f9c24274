//! `blocksize`: read time and throughput by request size, the sweep
//! flashbench users make by hand (flashbench's `--blocksize`, or `dd` with
//! each `bs=`): random reads of each size from 512 B (or the logical block)
//! up to 4 MiB in a region at the middle of the target. A size below the
//! flash page pays a whole page read for part of it; above it, the time
//! grows with the bytes and the rate levels off at what the bus and the
//! card can stream. Read-only.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::Results;
use super::metrics::{Better, Metric, MetricId, Unit, m};
use super::registry::{Registered, Session, Steps};
use super::{Cx, MeasureError, median, show};
use crate::console::table;
use crate::safety::ranges::Range;
use crate::svg::{Chart, Figure, Kind, Quantity, Scale, Series};
use crate::targets::{Request, TargetDescription};
use crate::units::{Iec, duration_ns, mb_per_s};

/// Reads at each size: enough for a stable median on a noisy reader.
const READS: usize = 32;
/// The region read: large enough that the reads land on different pages
/// and AUs, small enough for any card.
const REGION: u64 = 64 << 20;
/// The largest size tried: the biggest block flashbench reads.
const LARGEST: u64 = 4 << 20;

/// One request size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Size {
    pub block_bytes: u64,
    pub median_ns: f64,
    pub bytes_per_sec: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlocksizeResult {
    pub offset_bytes: u64,
    pub length_bytes: u64,
    pub reads_per_size: usize,
    pub sizes: Vec<Size>,
}

/// Nothing to derive: a result read back is shown as stored.
impl crate::measure::registry::Settle for BlocksizeResult {}

/// The sweep, from the logical block up to 4 MiB by doubling.
pub struct Blocksize;

impl super::Test for Blocksize {
    const KEY: &'static str = "blocksize";
    type Output = BlocksizeResult;

    fn plan(&self, d: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
        let smallest = u64::from(d.logical_block_size).max(512);
        if d.size_bytes < 2 * smallest {
            return Err(MeasureError::Bad {
                why: format!("the target ({} bytes) is too small for blocksize", d.size_bytes),
                fix: "give a target of at least a few MiB".into(),
            });
        }
        Ok(Vec::new())
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<BlocksizeResult, MeasureError> {
        let d = cx.target.description().clone();
        let lb = u64::from(d.logical_block_size).max(512);
        let length = REGION.min(d.size_bytes / 2 / lb * lb).max(lb);
        let offset = (d.size_bytes - length) / 2 / lb * lb;
        let sizes: Vec<u64> = std::iter::successors(Some(lb), |s| Some(s * 2))
            .take_while(|&s| s <= LARGEST.min(length))
            .collect();
        let mut buf = super::buffer(*sizes.last().unwrap_or(&lb))?;
        let mut rng = 0x5eed_b10c_u64;
        let mut out = Vec::new();
        for (i, &s) in sizes.iter().enumerate() {
            cx.check()?;
            let len = super::request_len(s, "the read size")?;
            let slots = length / s;
            // One request at a time, each at a random multiple of its size:
            // a sequential stream would be served from read-ahead.
            let reqs: Vec<Request> = (0..READS)
                .map(|_| Request::read(offset + crate::random::xorshift(&mut rng) % slots * s, len, 0))
                .collect();
            let done = crate::targets::run_all(cx.target, &reqs, 1, &mut buf)?;
            let lat: Vec<f64> = done.iter().map(|c| c.duration_ns as f64).collect();
            let m = median(&lat).max(1.0);
            out.push(Size {
                block_bytes: s,
                median_ns: m,
                bytes_per_sec: s as f64 * 1e9 / m,
            });
            cx.progress.advance(i as u64 + 1, sizes.len() as u64);
        }
        Ok(BlocksizeResult {
            offset_bytes: offset,
            length_bytes: length,
            reads_per_size: READS,
            sizes: out,
        })
    }

    fn record(out: &BlocksizeResult, results: &mut super::Results) {
        results.blocksize.set(out.clone());
    }
}

/// Read time and throughput by request size, 512 B to 4 MiB, in a region
/// at the middle of the target (read-only): where small reads pay for a
/// whole flash page, and where the rate levels off.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab blocksize /dev/mmcblk0
  flashlab blocksize sim:kingston-sa04g")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        s.run(&Blocksize)?;
        Ok(())
    }
}

/// How blocksize shows: its table, its plot, and the rate at 4 KiB and
/// at 4 MiB as comparable figures.
pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "blocksize";
    type Output = BlocksizeResult;

    fn text(r: &BlocksizeResult, device_s: f64, o: &mut String) {
        let sizes = table::grid_of(&["read size", "median time", "rate"], &r.sizes, |s| {
            vec![
                Iec(s.block_bytes).to_string(),
                duration_ns(s.median_ns),
                mb_per_s(s.bytes_per_sec),
            ]
        });
        let _ = writeln!(o, "{sizes}");
        let line = format!(
            "{} random reads of each size in {} from byte {}",
            r.reads_per_size,
            Iec(r.length_bytes),
            r.offset_bytes
        );
        show::closing(o, &line, device_s);
    }

    fn figures(r: &BlocksizeResult) -> Vec<Figure> {
        vec![Figure::Chart(Chart {
            title: "blocksize: read rate by request size".into(),
            x_label: "read size".into(),
            y_label: "rate".into(),
            x_scale: Scale::Log2,
            y_scale: Scale::Linear,
            kind: Kind::Line,
            series: vec![Series {
                label: "random reads".into(),
                points: r
                    .sizes
                    .iter()
                    .map(|s| (s.block_bytes as f64, s.bytes_per_sec / 1e6))
                    .collect(),
            }],
            x_unit: Quantity::Bytes,
            y_unit: Quantity::Number("MB/s"),
            clip_y: None,
            categories: vec![],
        })]
    }

    fn metrics(r: &BlocksizeResult, _: &Results) -> Vec<Metric> {
        let at = |b: u64| r.sizes.iter().find(|s| s.block_bytes == b);
        [4096, 4 << 20]
            .into_iter()
            .filter_map(|b| {
                at(b).map(|s| {
                    m(
                        MetricId::ReadRateAt { block_bytes: b },
                        Unit::BytesPerSec,
                        Better::Higher,
                        s.bytes_per_sec,
                    )
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;

    /// Kingston behind the AM335x host: a random read costs its access
    /// and a 16 KiB page read whatever its size up to a few KiB, so the
    /// rate doubles with the size there; large reads stream and level off.
    #[test]
    fn small_reads_pay_for_the_access_and_large_ones_stream() {
        let mut t = SimTarget::from_spec("sim:kingston-sa04g").unwrap();
        let r = crate::measure::run_alone(&Blocksize, &mut t).unwrap();
        assert_eq!(r.sizes.first().unwrap().block_bytes, 512);
        assert_eq!(r.sizes.last().unwrap().block_bytes, 4 << 20);
        let at = |b: u64| r.sizes.iter().find(|s| s.block_bytes == b).unwrap();
        assert!(
            at(4096).median_ns < 1.15 * at(512).median_ns,
            "{:?} {:?}",
            at(512),
            at(4096)
        );
        assert!(at(8192).bytes_per_sec > 1.7 * at(4096).bytes_per_sec);
        assert!(
            at(4 << 20).bytes_per_sec < 1.05 * at(1 << 20).bytes_per_sec,
            "levelled off"
        );
        assert!(
            at(4 << 20).bytes_per_sec > 2.5 * at(16384).bytes_per_sec,
            "large reads stream"
        );
        assert!(r.sizes.windows(2).all(|w| w[1].median_ns >= w[0].median_ns * 0.99));
    }
}
