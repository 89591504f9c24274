//! `flashlab bench`: its arguments (fio's words) and its one step.

use super::{Bench, Limit, Options, Preset, Rw, Spec, options_for, preset};
use crate::measure::note::NoteKind;
use crate::measure::registry::Session;
use crate::measure::registry::Steps;
use crate::safety::ranges::Range;
use crate::targets::TargetDescription;

/// `bench --rw`: fio's words.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RwArg {
    Read,
    Write,
    Randread,
    Randwrite,
    Randrw,
}

impl From<RwArg> for Rw {
    fn from(r: RwArg) -> Self {
        match r {
            RwArg::Read => Rw::Read,
            RwArg::Write => Rw::Write,
            RwArg::Randread => Rw::RandRead,
            RwArg::Randwrite => Rw::RandWrite,
            RwArg::Randrw => Rw::RandRw,
        }
    }
}

/// `bench --preset`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PresetArg {
    Quick,
    Cdm,
    A1,
    Sdspeed,
    Full,
}

impl From<PresetArg> for Preset {
    fn from(p: PresetArg) -> Self {
        match p {
            PresetArg::Quick => Preset::Quick,
            PresetArg::Cdm => Preset::Cdm,
            PresetArg::A1 => Preset::A1,
            PresetArg::Sdspeed => Preset::Sdspeed,
            PresetArg::Full => Preset::Full,
        }
    }
}

/// Throughput and latency, fio's way: every combination of --bs and --qd
/// for one --rw, each after a warm-up that does not count, latencies from
/// an HDR histogram; or a --preset (quick by default). With only --bs or
/// --qd, --rw is read, as in fio. Writes are preserved unless
/// --no-preserve.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab bench /dev/sdb --write                     the quick preset
  flashlab bench /dev/sdb --write --preset a1         A1-style verdict
  flashlab bench /dev/mmcblk0 --rw randread --bs 4k --qd 1,32 --runtime 10s")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
    /// A named set of tests (quick: 4 tests of 5 device-seconds; cdm:
    /// CrystalDiskMark's SEQ1M Q8/Q1 and RND4K Q32/Q1, read and write;
    /// a1: agnostics' A1 shape, 10 s each in 64 MiB; sdspeed: 30 s of
    /// 512 KiB sequential writes across 1 GiB, for the speed classes;
    /// full: all of these).
    #[arg(long, value_enum, conflicts_with_all = ["rw", "bs", "qd"])]
    pub preset: Option<PresetArg>,
    /// The access pattern, as fio's --rw: read and write in order,
    /// randread, randwrite, or randrw (mixed by --rwmix-read).
    #[arg(long, value_enum)]
    pub rw: Option<RwArg>,
    /// Block sizes, comma-separated (default 4k for random, 1M for
    /// sequential patterns).
    #[arg(long, value_name = "SIZE[,SIZE...]", value_delimiter = ',', value_parser = crate::args::size)]
    pub bs: Vec<u64>,
    /// Queue depths, comma-separated (default 1).
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',',
          value_parser = clap::value_parser!(u64).range(1..=super::MAX_QD as u64))]
    pub qd: Vec<u64>,
    /// Bytes each test moves after its warm-up (default 32M; with a
    /// preset, instead of its device time).
    #[arg(long, value_parser = crate::args::size, conflicts_with = "runtime")]
    pub size: Option<u64>,
    /// Device time each test runs after its warm-up (10s, 500ms, 2m);
    /// with a preset, instead of its own.
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration_ns)]
    pub runtime: Option<u64>,
    /// randrw: reads as a percentage of requests.
    #[arg(long, value_name = "PCT", default_value_t = 70, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub rwmix_read: u8,
    /// The test area (default: 256 MiB from the middle of the target,
    /// away from the start a card may cache or treat specially).
    #[arg(long, value_name = "OFFSET+LENGTH", value_parser = crate::args::range)]
    pub area: Option<Range>,
    #[command(flatten)]
    pub write: crate::args::WriteArgs,
}

/// `bench`'s choices as given; empty lists take the defaults.
#[derive(Debug, Clone, Default)]
pub struct BenchArgs {
    pub preset: Option<Preset>,
    pub rw: Option<Rw>,
    pub bs: Vec<u64>,
    pub qd: Vec<usize>,
    /// --size or --runtime; a preset's own limits without.
    pub limit: Option<Limit>,
    pub rwmix_read: u8,
    pub area: Option<(u64, u64)>,
}

impl Args {
    fn choices(&self) -> BenchArgs {
        BenchArgs {
            preset: self.preset.map(Into::into),
            rw: self.rw.map(Into::into),
            bs: self.bs.clone(),
            qd: self.qd.iter().map(|&q| q as usize).collect(),
            limit: match (self.size, self.runtime) {
                (_, Some(ns)) => Some(Limit::DeviceNs(ns)),
                (Some(s), None) => Some(Limit::Bytes(s)),
                (None, None) => None,
            },
            rwmix_read: self.rwmix_read,
            area: self.area.map(|r| (r.offset, r.len)),
        }
    }
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        let options = options_of(s.description(), &self.choices());
        let deep = options.iter().any(|o| o.qd > 1);
        let test = Bench {
            options,
            medium: s.medium(),
        };
        s.run(&test)?;
        if deep && s.is_real() && s.psync_only() {
            s.note(
                NoteKind::Engine,
                "--engine psync runs one request at a time: the tests above Q1 ran at queue depth 1 (auto or \
                 io_uring queue them)"
                    .into(),
                None,
                false,
            );
        }
        Ok(())
    }
}

/// What a custom test moves without --size or --runtime.
pub const DEFAULT_SIZE: Limit = Limit::Bytes(32 << 20);

/// The default test area: 256 MiB (larger than the write caches cards keep)
/// from the middle of the target, or all of a smaller one.
const BENCH_AREA: u64 = 256 << 20;

/// bench's tests for `a` on a target like `d`: a custom test's every
/// combination, or a preset's.
pub fn options_of(d: &TargetDescription, a: &BenchArgs) -> Vec<Options> {
    let block = u64::from(d.logical_block_size.max(1));
    let middle = d.size_bytes / 2 / block * block;
    let area_of = |len: Option<u64>| {
        a.area
            .unwrap_or_else(|| (middle, len.unwrap_or(BENCH_AREA).min(d.size_bytes - middle)))
    };
    // A custom test (--rw, or --bs/--qd alone, which mean fio's default
    // read): every combination of the block sizes and depths. Otherwise a
    // preset, quick by default.
    let custom = a.rw.or((!a.bs.is_empty() || !a.qd.is_empty()).then_some(Rw::Read));
    let tests: Vec<Spec> = match (custom, a.preset) {
        (Some(rw), _) => {
            let default_bs = if matches!(rw, Rw::Read | Rw::Write) {
                1 << 20
            } else {
                4096
            };
            let bs = if a.bs.is_empty() {
                vec![default_bs]
            } else {
                a.bs.clone()
            };
            let qd = if a.qd.is_empty() { vec![1] } else { a.qd.clone() };
            bs.iter()
                .flat_map(|&b| {
                    qd.iter()
                        .map(move |&q| (rw, b, q, a.limit.unwrap_or(DEFAULT_SIZE), None))
                })
                .collect()
        }
        // A preset, shortened or lengthened by --size or --runtime.
        (None, p) => preset(p.unwrap_or(Preset::Quick))
            .into_iter()
            .map(|(rw, bs, qd, limit, area)| (rw, bs, qd, a.limit.unwrap_or(limit), area))
            .collect(),
    };
    options_for(tests, area_of, a.rwmix_read)
}
