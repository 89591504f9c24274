//! One bench test's result: what classes judges and the report draws, apart
//! from the engine that measures it.

use serde::{Deserialize, Serialize};

/// fio's --rw values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    RandRw,
}

impl Rw {
    pub fn writes(self) -> bool {
        matches!(self, Rw::Write | Rw::RandWrite | Rw::RandRw)
    }
    pub fn random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::RandRw => "randrw",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    /// The whole distribution, read off the histogram at
    /// [`DISTRIBUTION_SHARES`]: enough points for the report to draw its
    /// shape (five percentiles had drawn a step, not the spread).
    /// Empty in runs stored before it was kept.
    #[serde(default)]
    pub distribution: Vec<Quantile>,
}

/// A point of a latency distribution: `share` of the requests took `ns`
/// or less.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quantile {
    pub share: f64,
    pub ns: u64,
}

/// Where the distribution is read: the fastest request, every twentieth
/// of the requests, then the tail (p99, p99.9, p99.99) and the slowest.
pub const DISTRIBUTION_SHARES: [f64; 24] = [
    0.0, 0.01, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85,
    0.90, 0.95, 0.99, 0.999, 0.9999,
];

impl Latency {
    /// The distribution as (latency ns, share) points for a plot: the one
    /// kept, else (older runs) the five percentiles, ending at the slowest
    /// request either way.
    pub fn curve(&self) -> Vec<(f64, f64)> {
        let kept = self.distribution.iter().map(|q| (q.ns as f64, q.share));
        let mut points: Vec<(f64, f64)> = if self.distribution.is_empty() {
            vec![
                (self.p50 as f64, 0.5),
                (self.p90 as f64, 0.9),
                (self.p99 as f64, 0.99),
                (self.p999 as f64, 0.999),
            ]
        } else {
            kept.collect()
        };
        points.push((self.max as f64, 1.0));
        points
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Device-seconds since the measured part began.
    pub t_s: f64,
    pub bytes_per_sec: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchTest {
    pub name: String,
    pub rw: Rw,
    /// "sequential" or "random".
    pub pattern: String,
    pub block_size: u64,
    pub queue_depth: usize,
    /// Requests measured (the warm-up's not counted).
    pub requests: u64,
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub latency_ns: Latency,
    pub timeline: Vec<Point>,
    /// Drawn from fewer than [`FLOOR_REQUESTS`] requests or less than
    /// [`FLOOR_NS`] of device time, or mostly from [`FLOOR_SLOWEST`]
    /// requests (a --size, an area or the step's budget ended it first):
    /// shown as such, never a headline figure (probe's
    /// speeds, a class verdict, advice, `results list` and `compare`).
    #[serde(default)]
    pub short_sample: bool,
}

/// The least one figure is drawn from: 64 requests and one device-second,
/// whichever is reached last (docs/DESIGN.md, "Device time"). A figure
/// from two requests of a RAM-backed loop device read 2947.86 MB/s, and a
/// second of a slow card's writes can hold a single one.
pub const FLOOR_REQUESTS: u64 = 64;
/// See [`FLOOR_REQUESTS`].
pub const FLOOR_NS: u64 = 1_000_000_000;
/// Nor is a figure drawn from a test whose 8 slowest requests hold half its
/// requests' time or more: it is then theirs, not the card's. On generated
/// hard cards (budget example's hard family, seed 1) the first random
/// writes after probe's geometry steps merged what those steps left open:
/// probe's test met the floor with 66 requests, two of them merges of 2.7 s
/// (card seed 135144), and said 11 IOPS where bench alone, from 3,036
/// requests, said 605; on another (179212) five merges of a second made 7
/// IOPS of 1,098. Two slow requests left 14 of 100 cards' figures over 2x
/// from bench alone's, eight left 5 (`scripts/probe-vs-bench.sh`); the
/// mean of a few rare events is off by about one over their root.
pub const FLOOR_SLOWEST: usize = 8;

impl BenchTest {
    /// The device-seconds its measured requests took.
    pub fn device_s(&self) -> f64 {
        if self.iops > 0.0 {
            self.requests as f64 / self.iops
        } else {
            0.0
        }
    }

    /// Mark it a short sample where it is one: as it is measured, and on
    /// every run read back (runs stored before the mark).
    pub fn settle(&mut self) {
        // (A part in a billion: requests / iops gives back the time it was
        // computed from, to rounding.)
        self.short_sample |= self.requests < FLOOR_REQUESTS || self.device_s() * 1e9 < FLOOR_NS as f64 * (1.0 - 1e-9);
    }

    /// "short sample: 2 requests, 679 µs", where it is one.
    pub fn short(&self) -> Option<String> {
        self.short_sample.then(|| {
            format!(
                "short sample: {}, {}",
                crate::units::count(self.requests, "request", "requests"),
                crate::units::duration_ns(self.device_s() * 1e9)
            )
        })
    }
}
