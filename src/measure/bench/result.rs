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
    /// shape (five percentiles showed a step, not the spread; issue 26).
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
    pub requests: u64,
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub latency_ns: Latency,
    pub timeline: Vec<Point>,
}
