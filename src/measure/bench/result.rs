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
