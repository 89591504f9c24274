//! Command-line parsing and dispatch, nothing else. clap parses and validates
//! every argument, sizes included, with no system calls (ripgrep's habit);
//! [`crate::run`] runs the command and [`crate::render`] prints its run
//! document. Exit codes come from the error's kind.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::command::{self as jobs, On, OpenAuArgs, ScatterArgs};
use crate::command::{debug as pattern, offline, restore, results};
use crate::document::RunDocument;
use crate::error::CliResult;
use crate::registers::RegisterKind;
use crate::runner::session::Consent;
use crate::safety::ranges::Range;
use crate::target::real::EngineChoice;
use crate::target::spec::DEFAULT_TARGET;

/// A size argument (`4M`, `16KiB`, `0x1000`), checked at parse time.
fn size(text: &str) -> Result<u64, String> {
    crate::units::parse_size(text).map_err(|e| e.to_string())
}

/// An erase size: a whole number of bytes above zero (0 would divide
/// nothing).
fn erase_size(text: &str) -> Result<u64, String> {
    match size(text)? {
        0 => Err("an erase size of 0 bytes cannot be; give 4M, 8M ...".into()),
        n => Ok(n),
    }
}

/// An `OFFSET+LENGTH` argument, checked at parse time.
fn range(text: &str) -> Result<Range, String> {
    crate::safety::ranges::parse(text).map_err(|e| e.to_string())
}

/// `--engine`: clap's side of [`EngineChoice`] (the seam knows nothing of clap).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Engine {
    Auto,
    Psync,
    #[value(name = "io_uring")]
    IoUring,
}

impl From<Engine> for EngineChoice {
    fn from(e: Engine) -> Self {
        match e {
            Engine::Auto => EngineChoice::Auto,
            Engine::Psync => EngineChoice::Psync,
            Engine::IoUring => EngineChoice::IoUring,
        }
    }
}

/// `bench --rw`: fio's words.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum BenchRw {
    Read,
    Write,
    Randread,
    Randwrite,
    Randrw,
}

impl From<BenchRw> for crate::measure::bench::Rw {
    fn from(r: BenchRw) -> Self {
        use crate::measure::bench::Rw;
        match r {
            BenchRw::Read => Rw::Read,
            BenchRw::Write => Rw::Write,
            BenchRw::Randread => Rw::RandRead,
            BenchRw::Randwrite => Rw::RandWrite,
            BenchRw::Randrw => Rw::RandRw,
        }
    }
}

/// `bench --preset`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum BenchPreset {
    Quick,
    Cdm,
    A1,
    Sdspeed,
    Full,
}

impl From<BenchPreset> for crate::measure::bench::Preset {
    fn from(p: BenchPreset) -> Self {
        use crate::measure::bench::Preset;
        match p {
            BenchPreset::Quick => Preset::Quick,
            BenchPreset::Cdm => Preset::Cdm,
            BenchPreset::A1 => Preset::A1,
            BenchPreset::Sdspeed => Preset::Sdspeed,
            BenchPreset::Full => Preset::Full,
        }
    }
}

/// `decode`'s register: clap's side of [`RegisterKind`].
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Register {
    Cid,
    Csd,
    Scr,
    Ssr,
}

impl From<Register> for RegisterKind {
    fn from(r: Register) -> Self {
        match r {
            Register::Cid => RegisterKind::Cid,
            Register::Csd => RegisterKind::Csd,
            Register::Scr => RegisterKind::Scr,
            Register::Ssr => RegisterKind::Ssr,
        }
    }
}

/// How a measuring command reads and writes a real target, and where its
/// run is saved.
#[derive(Debug, Clone, clap::Args)]
pub struct RunOpts {
    /// I/O engine for real targets: psync, io_uring, or auto (io_uring when the
    /// queue depth is above 1) [default: auto].
    #[arg(long, value_enum)]
    pub engine: Option<Engine>,
    /// The results store (SQLite) the run is saved in (default: $FLASHLAB_DB,
    /// else $XDG_DATA_HOME/flashlab/results.sqlite).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Do not save this run in the results store.
    #[arg(long)]
    pub no_store: bool,
}

/// The I/O engine alone, for commands that touch a real target but save
/// no run (restore, debug write-pattern).
#[derive(Debug, Clone, clap::Args)]
pub struct EngineOpt {
    /// I/O engine: psync, io_uring, or auto (io_uring when the queue depth is
    /// above 1) [default: auto].
    #[arg(long, value_enum)]
    pub engine: Option<Engine>,
}

/// Options every writing command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct WriteOpts {
    /// Consent to writing to a real device or file (its data is preserved and
    /// restored unless --no-preserve).
    #[arg(long)]
    pub write: bool,
    /// Keep no journal: the written ranges are destroyed.
    #[arg(long)]
    pub no_preserve: bool,
    /// Where the preservation journal goes (default: /var/lib/flashlab/journals
    /// for root, else $XDG_STATE_HOME/flashlab/journals).
    #[arg(long, value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
}

impl From<WriteOpts> for Consent {
    fn from(w: WriteOpts) -> Self {
        Consent {
            write: w.write,
            no_preserve: w.no_preserve,
            journal_dir: w.journal_dir,
        }
    }
}

/// What flash storage really is and how it really behaves.
#[derive(Debug, Parser)]
#[command(name = "flashlab", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Print exactly one JSON document on stdout and nothing else there.
    #[arg(long, global = true)]
    pub json: bool,

    /// `flashlab --engine E COMMAND`, as earlier versions took it: the same
    /// as the command's own --engine, which wins when both are given.
    #[arg(long = "engine", value_enum, hide = true)]
    pub engine_before: Option<Engine>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Identify a device: sizes, block sizes, transport, partitions, mounts, and the
    /// SD/MMC registers decoded (read-only).
    #[command(after_help = "Examples:
  flashlab info                      the built-in simulated card
  flashlab info /dev/mmcblk0         a card in an SD slot: registers decoded
  flashlab info /dev/sdb --json      a USB reader, as JSON")]
    Info {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        /// Every decoded register field (about ninety on an SD card), not
        /// only the summary.
        #[arg(long)]
        registers: bool,
    },
    /// Erase-block (AU) and page size from read latencies at 2^n and 3x2^n
    /// boundaries, with a confidence (read-only).
    #[command(after_help = "Examples:
  flashlab align /dev/mmcblk0        reads only
  flashlab align sim:kingston-sa04g  a simulated 2013 card")]
    Align {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
    },
    /// How many AUs the card keeps open for in-order and random writes: an
    /// automatic sweep that stops each run once it collapses (writes; the data
    /// is preserved unless --no-preserve).
    #[command(after_help = "Examples:
  flashlab open-au /dev/mmcblk0 --write           preserved: journalled and restored
  flashlab open-au sim:demo --random --max 8
  flashlab open-au /dev/sdb --write --full        flashbench's whole table")]
    OpenAu {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        /// Only the random-order sweep (flashbench --open-au --random).
        #[arg(long, conflicts_with = "linear")]
        random: bool,
        /// Only the in-order sweep.
        #[arg(long)]
        linear: bool,
        /// Erase size (default: align's estimate).
        #[arg(long, value_name = "SIZE", value_parser = erase_size)]
        erase_size: Option<u64>,
        /// Chunk written by the sweep (default: the page, doubled while the AU
        /// holds more than 4096 of them).
        #[arg(long, value_name = "SIZE", value_parser = size)]
        chunk: Option<u64>,
        /// Most open AUs tried (default: 32, or the most whose AUs fit on
        /// the target; given explicitly, a sweep that does not fit is refused).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=crate::measure::open_au::MAX_OPEN_AUS))]
        max: Option<u64>,
        /// Also every chunk size from the erase size down, at one AU, at the
        /// limit and one past it (flashbench's table).
        #[arg(long)]
        full: bool,
        #[command(flatten)]
        opts: WriteOpts,
    },
    /// The erase size (AU) from writes: two regions in one AU share one of
    /// the card's random-write slots, two AUs need two; for when align's reads
    /// cannot show it. Writes small windows across the target, preserved
    /// unless --no-preserve.
    #[command(after_help = "Examples:
  flashlab au /dev/mmcblk0 --write
  flashlab au sim:kingston-sa04g --open-aus 3")]
    Au {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        /// The card's random-write open-AU limit if known (open-au's or fat's),
        /// tried first.
        #[arg(long, value_name = "N",
              value_parser = clap::value_parser!(u64).range(1..=crate::measure::slot_writer::MAX_SLOT_AUS))]
        open_aus: Option<u64>,
        #[command(flatten)]
        opts: WriteOpts,
    },
    /// The flash page size from writes that straddle page boundaries (a
    /// second page programmed), where align's reads cannot show it; writes in
    /// one AU at the middle of the target, preserved unless --no-preserve.
    #[command(after_help = "Examples:
  flashlab page /dev/mmcblk0 --write
  flashlab page sim:demo --erase-size 4M")]
    Page {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        /// The region written (default: align's erase size, else 4 MiB).
        #[arg(long, value_name = "SIZE", value_parser = erase_size)]
        erase_size: Option<u64>,
        #[command(flatten)]
        opts: WriteOpts,
    },
    /// How many leading AUs take small random writes cheaply (the FAT area;
    /// writes, preserved unless --no-preserve).
    #[command(after_help = "Examples:
  flashlab fat /dev/mmcblk0 --write
  flashlab fat sim:demo --open-aus 24")]
    Fat {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        #[arg(long, value_name = "SIZE", value_parser = erase_size)]
        erase_size: Option<u64>,
        /// Leading AUs examined.
        #[arg(long, default_value_t = jobs::DEFAULT_FAT_AUS,
              value_parser = clap::value_parser!(u64).range(1..=crate::measure::fat::MAX_AUS))]
        max: u64,
        /// The card's random-write open-AU limit (open-au's "random" answer):
        /// each AU is then written beside that many ordinary AUs, which tells
        /// a FAT area apart even on slow hosts and under noise.
        #[arg(long, value_name = "N",
              value_parser = clap::value_parser!(u64).range(1..=crate::measure::fat::MAX_SLOT_AUS))]
        open_aus: Option<u64>,
        #[command(flatten)]
        opts: WriteOpts,
    },
    /// Is the card as large as it says? Position-tagged blocks sampled across
    /// the whole announced size, a cache push, then a bisection to the last
    /// good byte: genuine, fake (addresses wrap, writes lost, or kept only by
    /// a cache; with the usable size) or damaged. Writes, preserved unless
    /// --no-preserve; the first MiB is never written.
    #[command(after_help = "Examples:
  flashlab capacity /dev/sdb --write          is this 64 GB stick real?
  flashlab capacity sim:demo,capacity=64G,real_capacity=8G,fake_mode=wrap")]
    Capacity {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        /// Bytes at the start never written (default 1M: the partition
        /// table and boot sectors).
        #[arg(long, value_name = "SIZE", value_parser = size, default_value = "1M")]
        skip: u64,
        /// Bytes written after the samples to push them out of any write
        /// cache; also the spacing of the read probes that see wrap-around
        /// (default 32M, less on a target too small for it).
        #[arg(long, value_name = "SIZE", value_parser = size)]
        push: Option<u64>,
        #[command(flatten)]
        opts: WriteOpts,
    },
    /// Everything at once: identify, align and scatter; then au, page,
    /// open-au, fat, capacity and bench's quick preset (these write: on a
    /// real target only with --write, data preserved); then advice. A
    /// one-screen summary first; the run is saved, --html draws it.
    #[command(after_help = "Examples:
  flashlab probe                             the built-in simulated card
  flashlab probe /dev/mmcblk0                read-only steps only
  flashlab probe /dev/mmcblk0 --write --html card.html")]
    Probe {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        /// The erase size, when align cannot see it (as its hint says).
        #[arg(long, value_name = "SIZE", value_parser = erase_size)]
        erase_size: Option<u64>,
        /// Also write the HTML report of this run to FILE.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        #[command(flatten)]
        opts: WriteOpts,
    },
    /// Read latency of every block of a region, in order (read-only).
    #[command(after_help = "Examples:
  flashlab scatter /dev/mmcblk0 --length 16M
  flashlab scatter sim:demo --csv > map.csv")]
    Scatter {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        #[arg(long, default_value = "0", value_parser = size)]
        offset: u64,
        #[arg(long, default_value = "8M", value_parser = size)]
        length: u64,
        /// Read size (default: 4 KiB or the logical block).
        #[arg(long, value_name = "SIZE", value_parser = size)]
        block: Option<u64>,
        /// Every point as CSV (offset_bytes,latency_ns) on stdout.
        #[arg(long)]
        csv: bool,
    },
    /// Throughput and latency, fio's way: every combination of --bs and --qd
    /// for one --rw, each after a warm-up that does not count, latencies from
    /// an HDR histogram; or a --preset (quick by default). With only --bs or
    /// --qd, --rw is read, as in fio. Writes are preserved unless
    /// --no-preserve.
    #[command(after_help = "Examples:
  flashlab bench /dev/sdb --write                     the quick preset
  flashlab bench /dev/sdb --write --preset a1         A1-style verdict
  flashlab bench /dev/mmcblk0 --rw randread --bs 4k --qd 1,32 --runtime 10s")]
    Bench {
        /// A block device (/dev/mmcblk0), a regular file, or
        /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
        /// simulated card; `flashlab sim list` names the others).
        #[arg(value_name = "TARGET")]
        target: Option<String>,
        #[command(flatten)]
        run: RunOpts,
        /// A named set of tests (quick: 4 tests of 5 device-seconds; cdm:
        /// CrystalDiskMark's SEQ1M Q8/Q1 and RND4K Q32/Q1, read and write;
        /// a1: agnostics' A1 shape, 10 s each in 64 MiB; sdspeed: 30 s of
        /// 512 KiB sequential writes across 1 GiB, for the speed classes;
        /// full: all of these).
        #[arg(long, value_enum, conflicts_with_all = ["rw", "bs", "qd"])]
        preset: Option<BenchPreset>,
        #[arg(long, value_enum)]
        rw: Option<BenchRw>,
        /// Block sizes, comma-separated (default 4k for random, 1M for
        /// sequential patterns).
        #[arg(long, value_name = "SIZE[,SIZE...]", value_delimiter = ',', value_parser = size)]
        bs: Vec<u64>,
        /// Queue depths, comma-separated (default 1).
        #[arg(long, value_name = "N[,N...]", value_delimiter = ',',
              value_parser = clap::value_parser!(u64).range(1..=crate::measure::bench::MAX_QD as u64))]
        qd: Vec<u64>,
        /// Bytes each test moves after its warm-up (default 32M; with a
        /// preset, instead of its device time).
        #[arg(long, value_parser = size, conflicts_with = "runtime")]
        size: Option<u64>,
        /// Device time each test runs after its warm-up (10s, 500ms, 2m);
        /// with a preset, instead of its own.
        #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration_ns)]
        runtime: Option<u64>,
        /// randrw: reads as a percentage of requests.
        #[arg(long, default_value_t = 70, value_parser = clap::value_parser!(u8).range(0..=100))]
        rwmix_read: u8,
        /// The test area (default: 256 MiB from the middle of the target,
        /// away from the start a card may cache or treat specially).
        #[arg(long, value_name = "OFFSET+LENGTH", value_parser = range)]
        area: Option<Range>,
        #[command(flatten)]
        opts: WriteOpts,
    },
    /// The runs saved in the results store: list, show, compare, export,
    /// import.
    #[command(after_help = "Examples:
  flashlab results list --device kingston
  flashlab results compare 3 7
  flashlab results export 3 > run.json && flashlab results import run.json --db other.sqlite")]
    Results {
        /// The results store (default: $FLASHLAB_DB, else
        /// $XDG_DATA_HOME/flashlab/results.sqlite).
        #[arg(long, global = true, value_name = "PATH")]
        db: Option<PathBuf>,
        #[command(subcommand)]
        action: ResultsAction,
    },
    /// An HTML report of stored runs (by id) or run documents (files from
    /// --json or `results export`); several make a comparison. One
    /// self-contained file: inline SVG plots, no network.
    #[command(after_help = "Examples:
  flashlab report 3 -o card.html
  flashlab report 3 7 run.json -o comparison.html")]
    Report {
        /// Run ids (`flashlab results list`) or JSON files.
        #[arg(required = true, value_name = "ID|FILE")]
        runs: Vec<String>,
        /// Where the report goes.
        #[arg(short, long, value_name = "FILE.html")]
        output: PathBuf,
        /// The results store ids are read from (default: $FLASHLAB_DB, else
        /// $XDG_DATA_HOME/flashlab/results.sqlite).
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// Simulated cards: list the built-in profiles, show one's parameters, and
    /// reproduce the published measurements they are judged against.
    #[command(after_help = "Examples:
  flashlab sim list
  flashlab sim show kingston-sa04g --toml > my-card.toml
  flashlab sim reproduce all              the published tables, cell by cell")]
    Sim {
        #[command(subcommand)]
        action: SimAction,
    },
    /// Decode an SD/MMC register pasted as hex (sysfs, spaced bytes, 0x words).
    #[command(after_help = "Examples:
  flashlab decode cid $(cat /sys/block/mmcblk0/device/cid)
  flashlab decode csd 400e00325b5900001d177f800a40008d")]
    Decode {
        #[arg(value_enum)]
        register: Register,
        /// The register's hex; several arguments are joined with spaces.
        #[arg(required = true, num_args = 1..)]
        hex: Vec<String>,
        /// Decode CID/CSD with the MMC/eMMC layout instead of SD's.
        #[arg(long)]
        mmc: bool,
    },
    /// List pending preservation journals, or restore one (JOURNAL or TARGET) and
    /// verify it, after a crash or power cut during a writing test.
    #[command(after_help = "Examples:
  flashlab restore                     list pending journals
  flashlab restore /dev/mmcblk0        put back what a crashed run wrote")]
    Restore {
        /// A journal file or the target it belongs to; none lists them.
        what: Option<String>,
        /// Restore even if the target's size or serial no longer matches.
        #[arg(long)]
        force: bool,
        #[arg(long, value_name = "DIR")]
        journal_dir: Option<PathBuf>,
        #[command(flatten)]
        engine: EngineOpt,
    },
    /// Shell completions for bash, zsh, fish, elvish or powershell, on stdout.
    #[command(
        after_help = "Examples:\n  flashlab completions bash > /etc/bash_completion.d/flashlab\n  flashlab completions zsh > ~/.zfunc/_flashlab"
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The manual page (roff), on stdout.
    #[command(after_help = "Examples:\n  flashlab man > /usr/local/share/man/man1/flashlab.1 && man flashlab")]
    Man,
    /// Internal workloads for testing the write path (not a stable interface).
    #[command(hide = true)]
    Debug {
        #[command(subcommand)]
        action: DebugAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum DebugAction {
    /// Overwrite declared ranges with a pattern through the preserving write path.
    WritePattern {
        target: String,
        /// OFFSET+LENGTH, repeatable.
        #[arg(long = "range", required = true, value_parser = range)]
        ranges: Vec<Range>,
        #[arg(long, default_value_t = 1)]
        passes: u32,
        /// Sleep between writes (for signal tests).
        #[arg(long, default_value_t = 0)]
        pause_ms: u64,
        #[command(flatten)]
        opts: WriteOpts,
        #[command(flatten)]
        engine: EngineOpt,
    },
}

#[derive(Debug, Subcommand)]
pub enum ResultsAction {
    /// The stored runs, newest first.
    List {
        /// Only runs whose device (key or name) or target contains this.
        #[arg(long)]
        device: Option<String>,
    },
    /// A stored run, as its command printed it.
    Show { id: i64 },
    /// Runs side by side: each figure, its difference from the first run,
    /// and which run is better on it.
    Compare {
        /// Run ids or JSON files, at least two.
        #[arg(required = true, num_args = 2.., value_name = "ID|FILE")]
        runs: Vec<String>,
    },
    /// A stored run's document as JSON, for `results import` elsewhere.
    Export { id: i64 },
    /// Store a run document (from --json or `results export`); a run
    /// already stored is recognised and not stored twice.
    Import { file: PathBuf },
}

#[derive(Debug, Subcommand)]
pub enum SimAction {
    /// Built-in card profiles and host presets, with their sources.
    List,
    /// Every parameter of a profile (or `PROFILE,key=value...`), with units.
    Show {
        profile: String,
        /// Print a TOML file that `sim:FILE.toml` reads back.
        #[arg(long)]
        toml: bool,
    },
    /// Run a seed's own workload on the simulator and compare every published
    /// cell: at91, hsq, cf, flashbench, or all.
    Reproduce {
        #[arg(value_parser = ["at91", "hsq", "cf", "flashbench", "all"])]
        experiment: String,
    },
}

impl Command {
    /// The command's words, as the run document's `command` names them.
    fn name(&self) -> &'static str {
        match self {
            Command::Info { .. } => "info",
            Command::Align { .. } => "align",
            Command::OpenAu { .. } => "open-au",
            Command::Au { .. } => "au",
            Command::Page { .. } => "page",
            Command::Fat { .. } => "fat",
            Command::Capacity { .. } => "capacity",
            Command::Probe { .. } => "probe",
            Command::Scatter { .. } => "scatter",
            Command::Bench { .. } => "bench",
            Command::Results { action, .. } => match action {
                ResultsAction::List { .. } => "results list",
                ResultsAction::Show { .. } => "results show",
                ResultsAction::Compare { .. } => "results compare",
                ResultsAction::Export { .. } => "results export",
                ResultsAction::Import { .. } => "results import",
            },
            Command::Report { .. } => "report",
            Command::Sim { action } => match action {
                SimAction::List => "sim list",
                SimAction::Show { .. } => "sim show",
                SimAction::Reproduce { .. } => "sim reproduce",
            },
            Command::Decode { .. } => "decode",
            Command::Restore { .. } => "restore",
            Command::Debug { .. } => "debug write-pattern",
            Command::Completions { .. } => "completions",
            Command::Man => "man",
        }
    }
}

/// `--json`'s answer when a command fails: one document on stdout, what
/// completed (if anything did) with an `error` beside it.
fn error_document(command: &str, e: &crate::error::CliError) -> RunDocument {
    let mut doc = match &e.partial {
        Some(d) => (**d).clone(),
        None => {
            let mut d = RunDocument::new(command, None);
            d.finish(None);
            d
        }
    };
    let kind = match e.exit {
        crate::error::Exit::Usage => "usage",
        crate::error::Exit::Failed => "failed",
        crate::error::Exit::Interrupted => "interrupted",
        crate::error::Exit::Terminated => "terminated",
    };
    doc.put(
        "error",
        &serde_json::json!({"kind": kind, "exit_code": e.exit as i32, "message": e.message, "hint": e.hint}),
    );
    doc
}

/// Run flashlab with the process arguments; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --json asked for one document even for a bad command line.
            if e.use_stderr() && std::env::args().any(|a| a == "--json") {
                let command = std::env::args()
                    .skip(1)
                    .find(|a| !a.starts_with('-'))
                    .unwrap_or_default();
                let err = crate::error::CliError::usage(e.kind().to_string())
                    .hint("`flashlab --help` lists the commands, `flashlab COMMAND --help` their options");
                crate::render::print(&error_document(&command, &err), true);
            }
            // clap prints its own message; usage errors exit 2, --help/--version 0.
            let _ = e.print();
            if e.use_stderr() {
                crate::errln!("hint: `flashlab --help` lists the commands, `flashlab COMMAND --help` their options");
            }
            return e.exit_code();
        }
    };
    let as_json = cli.json;
    let command = cli.command.name();
    let code = match run(cli) {
        Ok(Output::Doc(doc)) => {
            let doc = *doc;
            crate::render::print(&doc, as_json);
            0
        }
        Ok(Output::Text(text)) => {
            crate::out!("{text}");
            0
        }
        Err(e) => {
            if as_json {
                crate::render::print(&error_document(command, &e), true);
            } else if let Some(doc) = &e.partial {
                crate::render::print(doc, false);
            }
            crate::errln!("{e}");
            e.exit as i32
        }
    };
    // Output that could not be written fails the run, but only now, once any
    // data a writing test changed is back (SIGPIPE is ignored, as Rust sets it
    // up, so a closed pipe is an error here instead of a kill mid-test).
    match crate::console::stdio::finish() {
        Ok(()) => code,
        Err(kind) => {
            if kind != std::io::ErrorKind::BrokenPipe {
                crate::errln!(
                    "error: cannot write the output: {}\nhint: check where stdout goes (a full disk?)",
                    std::io::Error::from(kind)
                );
            }
            if code == 0 { 1 } else { code }
        }
    }
}

/// What a command prints: a run document, or text of its own format
/// (`scatter --csv`, `sim show --toml`).
enum Output {
    Doc(Box<RunDocument>),
    Text(String),
}

fn run(cli: Cli) -> CliResult<Output> {
    use std::cell::RefCell;
    use std::rc::Rc;
    // Measuring commands save their run as each step lands.
    let saver: RefCell<Option<Rc<RefCell<crate::store::Saver>>>> = RefCell::new(None);
    let before = cli.engine_before;
    let on = |target: Option<String>, opts: Option<WriteOpts>, run: RunOpts| {
        let target = target.unwrap_or_else(|| {
            let line = format!(
                "no TARGET given: measuring the built-in simulated card {DEFAULT_TARGET} (give a device such as \
                 /dev/mmcblk0, a file, or sim:PROFILE)"
            );
            crate::errln!("{}", crate::console::wrap(&line, "", ""));
            DEFAULT_TARGET.to_string()
        });
        let save = if run.no_store {
            None
        } else {
            run.db
                .clone()
                .or_else(crate::store::default_path)
                .map(|p| Rc::new(RefCell::new(crate::store::Saver::open(&p))))
        };
        *saver.borrow_mut() = save.clone();
        On {
            spec: target,
            engine: EngineChoice::from(run.engine.or(before).unwrap_or(Engine::Auto)),
            consent: opts.map(Consent::from).unwrap_or_default(),
            save,
        }
    };
    let mut result = dispatch(cli.command, &on, cli.json, before);
    // A Ctrl-C or SIGTERM that came after the last write (while the last
    // step restored its data) is honoured now: the run stops with its
    // signal's exit code, its results printed and saved.
    if let (Some(signal), Ok(Output::Doc(_))) = (crate::safety::signals::pending(), &result)
        && let Ok(Output::Doc(doc)) = std::mem::replace(&mut result, Ok(Output::Text(String::new())))
    {
        result = Err(crate::error::interrupted(signal).with_document(*doc));
    }
    // The finished run (or what completed of it) is saved once more, whole;
    // a store that failed says so in the document too, for scripts.
    if let Some(s) = saver.borrow().as_ref() {
        let doc = match &mut result {
            Ok(Output::Doc(d)) => Some(d.as_mut()),
            Err(e) => e.partial.as_deref_mut(),
            Ok(Output::Text(_)) => None,
        };
        if let Some(doc) = doc {
            let mut s = s.borrow_mut();
            s.save(doc);
            if let Some(why) = s.failure() {
                doc.warnings.push(crate::document::Note {
                    kind: crate::document::NoteKind::Store,
                    message: format!("the run is not saved: {why}"),
                    hint: Some("--db PATH or FLASHLAB_DB chooses another store, --no-store skips it".into()),
                });
            }
            if let Some((id, path)) = s.saved() {
                let line = format!(
                    "saved as run {id} in {} (`flashlab results show {id}`, `flashlab report {id} -o run.html`)",
                    path.display()
                );
                crate::errln!("{}", crate::console::wrap(&line, "", ""));
            }
        }
    }
    result
}

fn dispatch(
    command: Command,
    on: &dyn Fn(Option<String>, Option<WriteOpts>, RunOpts) -> On,
    json: bool,
    before: Option<Engine>,
) -> CliResult<Output> {
    let doc = match command {
        Command::Info { target, run, registers } => jobs::info(&on(target, None, run), registers)?,
        Command::Align { target, run } => jobs::align(&on(target, None, run))?,
        Command::Probe {
            target,
            run,
            erase_size,
            html,
            opts,
        } => {
            let on = on(target, Some(opts), run);
            // A report that cannot be written is refused before the probe, not after.
            if let Some(path) = &html {
                crate::report::check_writable(path, &[&on.spec])?;
            }
            let doc = jobs::probe(&on, erase_size)?;
            if let Some(path) = html {
                let id = doc.target.as_ref().map_or(String::new(), |t| t.spec.clone());
                crate::report::write(&path, &[(id, doc.clone())])?;
                crate::errln!("report written to {}", path.display());
            }
            doc
        }
        Command::Results { db, action } => match action {
            ResultsAction::List { device } => results::list(db.as_deref(), device.as_deref())?,
            ResultsAction::Show { id } => results::show(db.as_deref(), id)?,
            ResultsAction::Compare { runs } => results::compare(db.as_deref(), &runs)?,
            ResultsAction::Export { id } => return Ok(Output::Text(results::export(db.as_deref(), id)?)),
            ResultsAction::Import { file } => results::import(db.as_deref(), &file)?,
        },
        Command::Report { runs, output, db } => {
            crate::report::check_writable(&output, &[])?;
            let loaded = runs
                .iter()
                .map(|w| results::load(db.as_deref(), w))
                .collect::<CliResult<Vec<_>>>()?;
            // Not over the bytes of a device or file a run measured.
            let targets: Vec<&str> = loaded
                .iter()
                .filter_map(|(_, d)| d.target.as_ref())
                .filter(|t| t.kind != crate::target::TargetKind::Sim)
                .map(|t| t.spec.as_str())
                .collect();
            crate::report::check_writable(&output, &targets)?;
            crate::report::write(&output, &loaded)?;
            let mut doc = crate::document::RunDocument::new("report", None);
            doc.put("report", &serde_json::json!({"path": output, "runs": runs}));
            doc.finish(None);
            doc
        }
        Command::OpenAu {
            target,
            run,
            random,
            linear,
            erase_size,
            chunk,
            max,
            full,
            opts,
        } => {
            let a = OpenAuArgs {
                erase: erase_size,
                chunk,
                max,
                random_only: random,
                linear_only: linear,
                full,
            };
            jobs::open_au(&on(target, Some(opts), run), &a)?
        }
        Command::Capacity {
            target,
            run,
            skip,
            push,
            opts,
        } => jobs::capacity(&on(target, Some(opts), run), skip, push)?,
        Command::Au {
            target,
            run,
            open_aus,
            opts,
        } => jobs::au(&on(target, Some(opts), run), open_aus)?,
        Command::Page {
            target,
            run,
            erase_size,
            opts,
        } => jobs::page(&on(target, Some(opts), run), erase_size)?,
        Command::Fat {
            target,
            run,
            erase_size,
            max,
            open_aus,
            opts,
        } => jobs::fat(&on(target, Some(opts), run), erase_size, max, open_aus)?,
        Command::Scatter {
            target,
            run,
            offset,
            length,
            block,
            csv,
        } => {
            let doc = jobs::scatter(&on(target, None, run), &ScatterArgs { offset, length, block })?;
            match (csv && !json, doc.get("scatter")) {
                (true, Some(r)) => return Ok(Output::Text(crate::measure::scatter::csv(&r))),
                _ => doc,
            }
        }
        Command::Bench {
            target,
            run,
            preset,
            rw,
            bs,
            qd,
            size,
            runtime,
            rwmix_read,
            area,
            opts,
        } => jobs::bench(
            &on(target, Some(opts), run),
            &jobs::BenchArgs {
                preset: preset.map(Into::into),
                rw: rw.map(Into::into),
                bs,
                qd: qd.into_iter().map(|q| q as usize).collect(),
                limit: match (size, runtime) {
                    (_, Some(ns)) => Some(crate::measure::bench::Limit::DeviceNs(ns)),
                    (Some(s), None) => Some(crate::measure::bench::Limit::Bytes(s)),
                    (None, None) => None,
                },
                rwmix_read,
                area: area.map(|r| (r.offset, r.len)),
            },
        )?,
        Command::Sim { action } => match action {
            SimAction::List => offline::sim_list(),
            SimAction::Show { profile, toml: true } => return Ok(Output::Text(offline::sim_toml(&profile)?)),
            SimAction::Show { profile, toml: false } => offline::sim_show(&profile)?,
            SimAction::Reproduce { experiment } => offline::sim_reproduce(&experiment)?,
        },
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "flashlab", &mut out);
            return Ok(Output::Text(String::from_utf8_lossy(&out).into_owned()));
        }
        Command::Man => {
            use clap::CommandFactory;
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut out)
                .map_err(|e| crate::error::CliError::failed(format!("cannot render the manual: {e}")))?;
            return Ok(Output::Text(String::from_utf8_lossy(&out).into_owned()));
        }
        Command::Decode { register, hex, mmc } => offline::decode(register.into(), &hex.join(" "), mmc)?,
        Command::Restore {
            what,
            force,
            journal_dir,
            engine,
        } => restore::run(
            what.as_deref(),
            force,
            journal_dir,
            engine.engine.or(before).unwrap_or(Engine::Auto).into(),
        )?,
        Command::Debug {
            action:
                DebugAction::WritePattern {
                    target,
                    ranges,
                    passes,
                    pause_ms,
                    opts,
                    engine,
                },
        } => pattern::run(
            &target,
            ranges,
            passes,
            pause_ms,
            &opts.into(),
            engine.engine.or(before).unwrap_or(Engine::Auto).into(),
        )?,
    };
    Ok(Output::Doc(Box::new(doc)))
}
