//! How capacity shows: the verdict with the usable size and what was not
//! seen, probe's capacity line, and the usable size as a comparable
//! figure.

use std::fmt::Write;

use super::{CapacityResult, Evidence, FakeKind, Verdict};
use crate::console::wrap;
use crate::measure::Results;
use crate::measure::metrics::{Better, Metric, MetricId, Unit, m};
use crate::measure::registry::Registered;
use crate::units::Iec;

pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "capacity";
    type Output = CapacityResult;

    fn text(r: &CapacityResult, device_s: f64, o: &mut String) {
        let bytes = |n: u64| format!("{} ({n} bytes)", Iec(n));
        let head = match (r.verdict, r.kind) {
            (Verdict::Genuine, _) => format!(
                "genuine: every sampled block across the announced {} read back from its own place",
                bytes(r.announced_bytes)
            ),
            (Verdict::Fake, kind) => {
                let how = match kind {
                    Some(FakeKind::Wrap) => "addresses wrap: a write past it lands on earlier data",
                    Some(FakeKind::Cache) => "writes past it read back only while the card's cache holds them",
                    Some(FakeKind::Chain) => "writes past it are lost, and further on addresses wrap onto earlier data",
                    Some(FakeKind::Drop) | None => "writes past it are lost",
                };
                format!(
                    "FAKE: announced {}, but only the first {} hold data; {how}{}",
                    bytes(r.announced_bytes),
                    bytes(r.usable_bytes),
                    r.reads_past
                        .as_ref()
                        .map_or(String::new(), |w| format!(" (reads there return {w})"))
                )
            }
            (Verdict::Damaged, _) => format!(
                "damaged: the announced {} is there, but {} lost data or refused I/O",
                bytes(r.announced_bytes),
                crate::units::count(r.bad_regions.len() as u64, "region", "regions")
            ),
        };
        let _ = writeln!(o, "{}", wrap(&head, "", "  "));
        if let Some((lo, hi)) = r.boundary {
            let _ = writeln!(
                o,
                "{}",
                wrap(&format!("  the real size lies between {lo} and {hi} bytes"), "", "  ")
            );
        }
        for b in r.bad_regions.iter().take(10) {
            let what = match b.evidence {
                Evidence::Foreign { from } => format!("held the block written for byte {from}"),
                Evidence::Zeros => "read back as zeros".into(),
                Evidence::Other => "read back as other data".into(),
                Evidence::IoError => "I/O errors".into(),
            };
            let _ = writeln!(
                o,
                "  bad: {} from byte {} ({}): {what}",
                Iec(b.len),
                b.offset,
                Iec(b.offset)
            );
        }
        if r.bad_regions.len() > 10 {
            let _ = writeln!(o, "  ... and {} more (--json lists them)", r.bad_regions.len() - 10);
        }
        // A cache matters where it could hide lost writes: once writes
        // were seen lost, it hid nothing of the verdict (the fake's own
        // lines say how they were lost).
        let cache = match r.verdict {
            Verdict::Genuine | Verdict::Damaged => format!(
                ", a write cache larger than the {} written after the samples{}",
                Iec(r.flush_bytes.max(r.push_bytes)),
                if super::thorough_helps(r.flush_bytes, r.announced_bytes, r.skip_bytes) {
                    " (--thorough: 1 GiB)"
                } else {
                    ""
                }
            ),
            Verdict::Fake => String::new(),
        };
        let summary = format!(
            "checked {} written blocks in {} and {} read probes; wrote {} (the originals \
             are written back where they changed). Not seen: a real size within {} of either end{cache}.",
            r.samples,
            crate::units::count(r.stages as u64, "stage", "stages"),
            r.read_probes,
            Iec(r.bytes_written),
            Iec(r.skip_bytes),
        );
        let _ = writeln!(o, "{}", wrap(&summary, "", ""));
        let _ = writeln!(o, "{device_s:.1} device-seconds");
    }

    fn summary(c: &CapacityResult, _: &Results) -> Vec<(crate::measure::topic::Topic, String)> {
        let line = match (c.verdict, c.kind) {
            // Sampled, not proven ("all 29.72 GiB hold data" from
            // 65 written blocks): say what would not show. How many blocks
            // were written and read is `capacity`'s own text and the
            // JSON's: with them the line took two of probe's screen.
            (Verdict::Genuine, _) => format!(
                "genuine as far as sampled (a cache over {} hides a fake)",
                Iec(c.flush_bytes.max(c.push_bytes))
            ),
            (Verdict::Fake, k) => format!(
                "FAKE: announces {}, holds {} ({})",
                Iec(c.announced_bytes),
                Iec(c.usable_bytes),
                match k {
                    Some(FakeKind::Wrap) => "addresses wrap",
                    Some(FakeKind::Cache) => "writes past it kept only by a cache",
                    Some(FakeKind::Chain) => "writes past it lost, then addresses wrap",
                    Some(FakeKind::Drop) | None => "writes past it are lost",
                }
            ),
            (Verdict::Damaged, _) => format!(
                "damaged: {}",
                crate::units::count(c.bad_regions.len() as u64, "bad region", "bad regions")
            ),
        };
        vec![(crate::measure::topic::Topic::Capacity, line)]
    }

    fn metrics(c: &CapacityResult, _: &Results) -> Vec<Metric> {
        vec![m(
            MetricId::UsableCapacity,
            Unit::Bytes,
            // A larger card is not a better one; a fake's shortfall shows
            // in its verdict.
            Better::Neither,
            c.usable_bytes as f64,
        )]
    }
}
