//! The command line as clap reads it: every command, its arguments and
//! its help text, and the run document's name for each command.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::args::{Common, Engine, WriteArgs};
use crate::document::CommandName;
use crate::measure::TestCommand;
use crate::registers::RegisterKind;
use crate::safety::ranges::Range;

/// `flashlab life`'s arguments.
#[derive(Debug, clap::Args)]
pub struct LifeArgs {
    /// The trace file (for blktrace's NAME.blktrace.N, every CPU's file
    /// beside it is read too).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// The card: sim:PROFILE[,key=value...] (`flashlab sim list`), or
    /// RUN_ID, a stored probe of the real card (its measured erase block,
    /// page, open AUs and FAT area become the model; an unsure verdict
    /// adds the card at its other end). Several compare cards; the first
    /// is the baseline.
    #[arg(long, required = true, value_name = "SPEC|RUN_ID", value_parser = crate::args::card)]
    pub card: Vec<crate::args::Card>,
    /// fresh: a new card. steady: a card in use (the trace's footprint
    /// written, the trace repeated until amplification settles within 1%).
    #[arg(long, value_enum, default_value = "steady")]
    pub start: LifeStart,
    /// Which blktrace event is the device's: D (issued to the driver,
    /// after merges) or Q (queued, as fio's replay takes them).
    #[arg(long, value_enum, default_value = "d", value_name = "D|Q")]
    pub events: TraceEvents,
    /// Bytes added to every offset: the start of the partition the trace
    /// was taken on (`cat /sys/class/block/mmcblk0p2/start` x 512), since AU
    /// alignment is the card's.
    #[arg(long, value_name = "BYTES", value_parser = crate::args::size, default_value = "0")]
    pub offset: u64,
    /// Erase cycles a block takes, where you know them (from the card's
    /// datasheet); otherwise a prior from the cell type.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub pe: Option<u64>,
    /// What if: writes held in RAM and each dirty 4 KiB block written
    /// once per DURATION (commit=N, log2ram).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration_ns)]
    pub coalesce: Option<u64>,
    /// What if: the partition moved by BYTES.
    #[arg(long, value_name = "BYTES", value_parser = crate::args::size)]
    pub shift: Option<u64>,
    /// What if: the discards never reached the card.
    #[arg(long)]
    pub no_discard: bool,
    #[command(flatten)]
    pub store: crate::args::StoreArgs,
}

/// `flashlab batch`'s arguments.
#[derive(Debug, clap::Args)]
pub struct BatchArgs {
    /// The devices: block devices, files, or sim: cards; one row each.
    #[arg(value_name = "DEVICE", value_parser = crate::args::target)]
    pub devices: Vec<crate::args::TargetArg>,
    /// Also every removable disk with media in it (USB and SD readers;
    /// never loop or RAM devices).
    #[arg(long)]
    pub all_removable: bool,
    /// A station: test each card as it is put in (into DEVICE's slot, or
    /// any removable disk with none named) until Ctrl-C or SIGTERM, then
    /// print one table of every card.
    #[arg(long, conflicts_with = "all_removable")]
    pub watch: bool,
    /// Also write and read back every block of each device first, as
    /// f3write/f3read and H2testw do: its data is DESTROYED, not
    /// journalled (this flag is its consent; --write does not give it). Simulated
    /// cards are left out.
    #[arg(long)]
    pub destructive: bool,
    /// What each device gets: capacity, bench (the quick preset), probe
    /// (every step; capacity and bench among them).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "capacity,bench",
        value_name = "TEST[,TEST...]"
    )]
    pub tests: Vec<BatchTest>,
    /// DEVICE=LABEL or PORT=LABEL (as the table's slot shows it), for
    /// each device you want named in the table; repeatable.
    #[arg(long, value_name = "WHERE=LABEL", value_parser = batch_label)]
    pub label: Vec<(String, String)>,
    /// A file of WHERE LABEL lines (a station's slot map); # starts a comment.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// The classes every card claims (C10, U3, V30, A1 ...), over what
    /// each card's SSR says; a card that misses one is SUSPECT.
    #[arg(long, value_name = "CLASS[,CLASS...]", value_delimiter = ',', value_parser = sd_class)]
    pub claims: Vec<crate::measure::bench::classes::SdClass>,
    /// Device time of each of bench's four tests (default 5s).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration_ns)]
    pub runtime: Option<u64>,
    #[command(flatten)]
    pub engine: crate::args::EngineOpt,
    #[command(flatten)]
    pub store: crate::args::StoreArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `batch --tests`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BatchTest {
    Capacity,
    Bench,
    Probe,
}

/// `--label WHERE=LABEL`.
fn batch_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((w, l)) if !w.trim().is_empty() => Ok((w.trim().to_string(), crate::args::label(l)?)),
        _ => Err("give WHERE=LABEL: a device (/dev/sdb) or a slot (1-1.2), then the label".into()),
    }
}

/// An SD class by name.
fn sd_class(text: &str) -> Result<crate::measure::bench::classes::SdClass, String> {
    crate::measure::bench::classes::SdClass::parse(text).ok_or_else(|| {
        let names: Vec<&str> = crate::measure::bench::classes::names().map(|c| c.as_str()).collect();
        format!("not an SD class; one of {}", names.join(", "))
    })
}

/// `life --start`: clap's side of [`crate::measure::life::Start`].
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LifeStart {
    Fresh,
    Steady,
}

impl From<LifeStart> for crate::measure::life::Start {
    fn from(s: LifeStart) -> Self {
        match s {
            LifeStart::Fresh => crate::measure::life::Start::Fresh,
            LifeStart::Steady => crate::measure::life::Start::Steady,
        }
    }
}

/// `life --events`: which blktrace action counts as the device's.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TraceEvents {
    #[value(name = "d", alias = "D")]
    D,
    #[value(name = "q", alias = "Q")]
    Q,
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

/// What flash storage really is and how it really behaves.
#[derive(Debug, Parser)]
#[command(
    name = "flashlab",
    version,
    about,
    long_about = "What flash storage really is and how it really behaves: SD and microSD cards, eMMC, \
CompactFlash, USB sticks and SSDs, identified down to their SD/MMC registers and measured: erase-block (AU) \
and page size from read latencies, how many AUs stay open for writes, the FAT-optimised area, throughput \
and latency as fio measures them, SD class verdicts, and fake capacity as f3probe finds it.\n\n\
Nothing is written without --write, and what a writing step overwrites is journalled first, restored and \
read back after it, also after a crash (`flashlab restore`). Every verdict carries a confidence that means \
what it says: a file, a loop device or a noisy reader gets no confident geometry. Every writing step has a \
budget of device time (--budget) and says \"unsure\" when it ends before the answer.\n\n\
Without a target, commands measure sim:demo, a simulated card; `flashlab sim list` names the others. Runs \
are saved in a results store (SQLite) for `flashlab results` and `flashlab report`.",
    after_help = "Examples:
  flashlab probe                      the built-in simulated card, every step
  sudo flashlab info /dev/mmcblk0     what the card says of itself (read-only)
  sudo flashlab probe /dev/mmcblk0 --write --html card.html
  flashlab results list",
    propagate_version = true
)]
pub struct Cli {
    /// Print exactly one JSON document on stdout and nothing else there
    /// (the same as --format json).
    #[arg(long, global = true, conflicts_with = "format")]
    pub json: bool,

    /// How to write the run on stdout: text (the default), json, csv
    /// (scatter's points), toml (a simulated card, `sim show`) or html (the
    /// report).
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    pub format: Option<crate::format::FormatKind>,

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
        #[command(flatten)]
        common: Common,
        /// Every decoded register field (about ninety on an SD card), not
        /// only the summary.
        #[arg(long)]
        registers: bool,
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
        #[command(flatten)]
        common: Common,
        /// The erase size, when align cannot see it (as its hint says).
        #[arg(long, value_name = "SIZE", value_parser = crate::args::erase_size)]
        erase_size: Option<u64>,
        /// Also write the HTML report of this run to FILE.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        #[command(flatten)]
        write: WriteArgs,
    },
    /// The measuring tests: align, scatter, au, page, open-au, fat,
    /// capacity, bench (each in its own folder under src/measure).
    #[command(flatten)]
    Test(TestCommand),
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
  flashlab report 3 7 run.json -o comparison.html
  flashlab report --batch vm-1795819259 -o shelf.html")]
    Report {
        /// Run ids (`flashlab results list`) or JSON files.
        #[arg(required_unless_present = "batch", value_name = "ID|FILE")]
        runs: Vec<String>,
        /// Every stored run of this batch, side by side (`flashlab batch`
        /// prints its id).
        #[arg(long, value_name = "ID")]
        batch: Option<String>,
        /// Where the report goes (default: flashlab-report-ID[-ID...].html
        /// in the current directory).
        #[arg(short, long, value_name = "FILE.html")]
        output: Option<PathBuf>,
        /// The results store ids are read from (default: $FLASHLAB_DB, else
        /// $XDG_DATA_HOME/flashlab/results.sqlite).
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// Read what another tool printed into a stored run: flashbench's -a,
    /// --open-au, --find-fat and --scatter output, judged by flashlab's own
    /// rules.
    #[command(after_help = "Examples:
  flashlab import flashbench run.txt             a saved flashbench session
  xclip -o | flashlab import flashbench -        pasted from a mailing list
  flashlab import flashbench a.txt open-au.txt   several files of one card")]
    Import {
        #[command(subcommand)]
        source: ImportSource,
    },
    /// Record the block I/O a device receives, in blktrace's binary format
    /// (PREFIX.blktrace.CPU, which blkparse and `flashlab life` read), for
    /// --for DURATION or until Ctrl-C. Read-only: it never writes the
    /// device. Needs root and the kernel's block tracing.
    #[command(after_help = "Examples:
  sudo flashlab trace /dev/mmcblk0 --for 1h -o /dev/shm/pi     record an hour
  flashlab life /dev/shm/pi.blktrace.0 --card sim:kingston-sa04g
  blkparse -i /dev/shm/pi                                     the same files, as text")]
    Trace {
        /// The block device (a whole card, or a partition).
        #[arg(value_name = "DEVICE")]
        device: PathBuf,
        /// How long to record (10s, 5m, 1h; at most a day); without it,
        /// until Ctrl-C or SIGTERM.
        #[arg(long = "for", value_name = "DURATION", value_parser = crate::units::parse_duration_ns)]
        duration: Option<u64>,
        /// Where the files go: PREFIX.blktrace.0, PREFIX.blktrace.1, ...
        /// (one per CPU). Best not on the traced device.
        #[arg(short, long, value_name = "PREFIX")]
        output: PathBuf,
    },
    /// How long a card lasts under a workload, and why: a block trace
    /// replayed on a card model, with the flash it writes by cause (host
    /// data, AU merges, garbage collection, partial pages), amplification,
    /// erases, years of life as P10/P50/P90, latency, what costs most, and
    /// what-ifs. Reads blkparse text, blktrace binary (all CPUs' files),
    /// fio iolog v2/v3 and biosnoop output, detected by content, also gzip
    /// or zstd compressed.
    #[command(after_help = "Examples:
  sudo blktrace -d /dev/mmcblk0 -w 3600 -o pi     record an hour (or biosnoop, fio --write_iolog)
  flashlab life pi.blktrace.0 --card sim:kingston-sa04g
  flashlab life pi.blktrace.0 --card sim:kingston-sa04g --coalesce 30s --no-discard
  flashlab life fio.log --card sim:demo --card sim:emmc-hs400   which lasts longer")]
    Life(LifeArgs),
    /// Many devices at once, one table: capacity and bench (or probe) on
    /// each, with every safety rule of a single run. Data checks run side by
    /// side; speed is measured one device at a time per shared bus (a USB
    /// controller, an SD host). Each row: slot, identity, label, sizes, fake
    /// kind, speeds, classes, and PASS, FAIL or SUSPECT with the rule that
    /// decided. Each device's run is stored, tagged with the batch.
    #[command(after_help = "Examples:
  sudo flashlab batch /dev/sdb /dev/sdc /dev/sdd --write
  sudo flashlab batch --all-removable --write --claims C10 --labels shelf.txt
  sudo flashlab batch --watch --write                  a station: each card as it is put in
  flashlab batch sim:demo sim:demo,capacity=8G,real_capacity=1G   simulated cards")]
    Batch(BatchArgs),
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
  flashlab restore /dev/mmcblk0        put back what a crashed run wrote
  flashlab restore --set-aside J.fljournal   give up on a damaged journal")]
    Restore {
        /// A journal file or the target it belongs to; none lists them.
        #[arg(value_name = "JOURNAL|TARGET")]
        what: Option<String>,
        /// Restore even if the target's size or serial no longer matches.
        #[arg(long)]
        force: bool,
        /// Give up on a pending journal (damaged, or out of reach for good):
        /// it is renamed and kept for inspection, no run counts it as
        /// pending any more, and its bytes are NOT put back.
        #[arg(long, requires = "what", conflicts_with = "force")]
        set_aside: bool,
        /// Where the journals are (default: /var/lib/flashlab/journals for
        /// root, else $XDG_STATE_HOME/flashlab/journals). Journals in any
        /// other directory are found too, through the register every run
        /// keeps in /var/tmp/flashlab/pending.
        #[arg(long, value_name = "DIR", value_parser = crate::args::journal_dir)]
        journal_dir: Option<PathBuf>,
        #[command(flatten)]
        engine: crate::args::EngineOpt,
    },
    /// Serve a simulated card as a real block device (/dev/loopN over a FUSE
    /// file), in real time, until Ctrl-C or SIGTERM: dd, fio, f3probe, mkfs
    /// and flashlab itself then run against a card whose geometry is known.
    /// Needs root and /dev/fuse.
    #[command(after_help = "Examples:
  sudo flashlab emulate sim:kingston-sa04g            prints /dev/loopN, serves until Ctrl-C
  sudo flashlab emulate sim:demo,capacity=1G --time-scale 0.1   ten times faster than the card
  sudo flashlab emulate sim:demo --backing card.img   the data survives a restart
  sudo flashlab emulate sim:demo --record card.blktrace.0   then: flashlab life card.blktrace.0 --card sim:demo
  sudo flashlab emulate --cleanup                     remove what a killed emulation left
  sudo flashlab emulate --cleanup --force PID         end a stopped emulation that hangs its device
  sudo kill -USR1 PID; sudo kill -USR2 PID            pull the card out of its slot, put it back")]
    Emulate {
        /// The card: sim:PROFILE[,key=value...] (`flashlab sim list`).
        #[arg(value_name = "SPEC", required_unless_present = "cleanup", value_parser = crate::args::sim_card)]
        spec: Option<crate::args::SimCard>,
        /// Wall seconds per second of the card's time: 1 is real time, 0.1
        /// ten times faster.
        #[arg(long, default_value_t = 1.0, value_parser = time_scale, value_name = "F")]
        time_scale: f64,
        /// Keep the card's data in FILE (a regular file of the card's size,
        /// made if missing) instead of memory, so a filesystem on it
        /// survives a restart.
        #[arg(long, value_name = "FILE")]
        backing: Option<PathBuf>,
        /// Write each request in the order the card took it to FILE, in
        /// blktrace's binary format (`flashlab life` and blkparse read it):
        /// what the card saw, where a capture of the device holds what the
        /// kernel sent.
        #[arg(long, value_name = "FILE")]
        record: Option<PathBuf>,
        /// Print the device as one JSON document on stdout (the summary
        /// still goes to stderr at the end).
        #[arg(long)]
        json: bool,
        /// Only detach and unmount what emulations killed earlier left.
        #[arg(long, conflicts_with_all = ["spec", "backing", "record", "time_scale"])]
        cleanup: bool,
        /// With --cleanup: end the running emulation PID (a stopped one
        /// hangs its device's I/O), failing what waits on it with EIO.
        #[arg(long, value_name = "PID", requires = "cleanup")]
        force: Option<u32>,
    },
    /// Shell completions for bash, zsh, fish, elvish or powershell, on stdout.
    #[command(
        after_help = "Examples:\n  flashlab completions bash > /etc/bash_completion.d/flashlab\n  flashlab completions zsh > ~/.zfunc/_flashlab"
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The manual pages (roff): flashlab(1) on stdout, one command's page, or
    /// every page into a directory.
    #[command(after_help = "Examples:
  sudo mkdir -p /usr/local/share/man/man1
  sudo flashlab man --dir /usr/local/share/man/man1 && man flashlab-probe
  flashlab man probe | man -l -")]
    Man {
        /// One command's page (flashlab-probe(1) for `probe`; `results list` for a nested one)
        #[arg(value_name = "COMMAND")]
        command: Vec<String>,
        /// Write flashlab.1 and a page per command (flashlab-probe.1 ...) into DIR
        #[arg(long, value_name = "DIR", conflicts_with = "command")]
        dir: Option<std::path::PathBuf>,
    },
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
        #[arg(value_parser = crate::args::target)]
        target: crate::args::TargetArg,
        /// OFFSET+LENGTH, repeatable.
        #[arg(long = "range", required = true, value_parser = crate::args::range)]
        ranges: Vec<Range>,
        #[arg(long, default_value_t = 1)]
        passes: u32,
        /// Sleep between writes (for signal tests).
        #[arg(long, default_value_t = 0)]
        pause_ms: u64,
        #[command(flatten)]
        opts: crate::args::WriteArgs,
        #[command(flatten)]
        engine: crate::args::EngineOpt,
    },
}

#[derive(Debug, Subcommand)]
pub enum ResultsAction {
    /// The stored runs, newest first.
    #[command(after_help = "Examples:
  flashlab results list
  flashlab results list --device kingston    runs of one card (its key, name or target)")]
    List {
        /// Only runs whose device (key or name) or target contains this.
        #[arg(long)]
        device: Option<String>,
        /// Only the runs of this batch (`flashlab batch` prints its id).
        #[arg(long, value_name = "ID")]
        batch: Option<String>,
        /// Only the runs of this host (its name; in a fleet store, the
        /// station's host).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Only the runs whose label (`--label` at run time, or a batch's)
        /// contains this, in any case.
        #[arg(long, value_name = "TEXT")]
        label: Option<String>,
    },
    /// A stored run, as its command printed it.
    #[command(after_help = "Examples:
  flashlab results show 3
  flashlab results show 3 --json")]
    Show {
        /// The run's id (`flashlab results list`).
        #[arg(value_parser = crate::args::run_id)]
        id: i64,
        /// All of the run's text: a probe's advice whole, where its screen
        /// cuts it to fit 80x24.
        #[arg(short, long)]
        verbose: bool,
    },
    /// Runs side by side: each figure, its difference from the first run,
    /// and which run is better on it.
    #[command(after_help = "Examples:
  flashlab results compare 1 2
  flashlab results compare 3 other-card.json    a stored run beside a file")]
    Compare {
        /// Run ids or JSON files, at least two.
        #[arg(required = true, num_args = 2.., value_name = "ID|FILE")]
        runs: Vec<String>,
    },
    /// A stored run's document as JSON, for `results import` elsewhere.
    #[command(after_help = "Examples:
  flashlab results export 3 > run.json")]
    Export {
        /// The run's id (`flashlab results list`).
        #[arg(value_parser = crate::args::run_id)]
        id: i64,
    },
    /// Send the local store's runs to the fleet store (--db
    /// postgres://... or FLASHLAB_DB): each run once, again only when it
    /// changed; safe to repeat after a kill or a lost connection.
    #[command(after_help = "Examples:
  flashlab results upload --db postgres://lab@fleet.example/flashlab")]
    Upload,
    /// Store a run document (from --json or `results export`); a run
    /// already stored is recognised and not stored twice.
    #[command(after_help = "Examples:
  flashlab results import run.json
  flashlab results import run.json --db other.sqlite")]
    Import {
        /// A run document: what `--json` or `results export` printed.
        file: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum SimAction {
    /// Built-in card profiles and host presets, with their sources.
    #[command(after_help = "Examples:
  flashlab sim list
  flashlab sim list --json")]
    List,
    /// Every parameter of a profile (or `PROFILE,key=value...`), with units.
    #[command(after_help = "Examples:
  flashlab sim show kingston-sa04g
  flashlab sim show demo,au_size=8M --toml > card.toml    then: flashlab probe sim:card.toml")]
    Show {
        /// A built-in profile (`flashlab sim list`), with `,key=value`
        /// overrides if wanted.
        #[arg(value_parser = crate::args::sim_card)]
        profile: crate::args::SimCard,
        /// Print a TOML file that `sim:FILE.toml` reads back.
        #[arg(long)]
        toml: bool,
    },
    /// Replay a published measurement's own workload (AT91 boot reads, fio
    /// on an eMMC with and without the MMC software queue, CompactFlash PIO
    /// timings, flashbench's patterns) on its simulated card and compare
    /// every published cell with the model's.
    #[command(after_help = "Examples:
  flashlab sim reproduce at91
  flashlab sim reproduce all --json")]
    Reproduce {
        /// Which publication: at91, hsq, cf, flashbench, or all.
        #[arg(value_parser = ["at91", "hsq", "cf", "flashbench", "all"])]
        experiment: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ImportSource {
    /// flashbench's text output (Arnd Bergmann's flashbench): every table in
    /// the files, judged together as runs of one card, with notes where
    /// flashbench's own output misleads; stored like any run.
    #[command(after_help = "Examples:
  flashlab import flashbench run.txt
  flashlab import flashbench - < pasted.txt --device \"Kingston 4GB\"
  flashlab import flashbench cards.txt --column A    one card of a side-by-side table")]
    Flashbench {
        /// Files holding flashbench's output (shell prompts, mail quoting
        /// and other text around the tables are skipped), or - for stdin.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<String>,
        /// The card's column, when a table lays several cards side by side.
        #[arg(long, value_name = "NAME")]
        column: Option<String>,
        /// A name for the card in `results list`, when no CID is pasted with
        /// the output (a CID gives the key flashlab's own runs of the card have).
        #[arg(long, value_name = "NAME")]
        device: Option<String>,
        /// flashbench's command line, for tables pasted without theirs (the
        /// number of open AUs, --random and --erasesize shape the reading).
        #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
        command: Option<String>,
        /// The results store (SQLite) the run is saved in (default:
        /// $FLASHLAB_DB, else $XDG_DATA_HOME/flashlab/results.sqlite).
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Do not save the run in the results store.
        #[arg(long)]
        no_store: bool,
    },
}

impl Command {
    /// The command's words, as the run document's `command` names them.
    pub(super) fn name(&self) -> CommandName {
        match self {
            Command::Info { .. } => CommandName::Info,
            Command::Probe { .. } => CommandName::Probe,
            Command::Test(t) => CommandName::Test(t.test_name()),
            Command::Results { action, .. } => match action {
                ResultsAction::List { .. } => CommandName::ResultsList,
                ResultsAction::Show { .. } => CommandName::ResultsShow,
                ResultsAction::Compare { .. } => CommandName::ResultsCompare,
                ResultsAction::Export { .. } => CommandName::ResultsExport,
                ResultsAction::Import { .. } => CommandName::ResultsImport,
                ResultsAction::Upload => CommandName::ResultsUpload,
            },
            Command::Report { .. } => CommandName::Report,
            Command::Sim { action } => match action {
                SimAction::List => CommandName::SimList,
                SimAction::Show { .. } => CommandName::SimShow,
                SimAction::Reproduce { .. } => CommandName::SimReproduce,
            },
            Command::Decode { .. } => CommandName::Decode,
            Command::Restore { .. } => CommandName::Restore,
            Command::Debug { .. } => CommandName::DebugWritePattern,
            Command::Emulate { .. } => CommandName::Emulate,
            Command::Life(_) => CommandName::Life,
            Command::Batch(_) => CommandName::Batch,
            Command::Trace { .. } => CommandName::Trace,
            Command::Import {
                source: ImportSource::Flashbench { .. },
            } => CommandName::ImportFlashbench,
            Command::Completions { .. } => CommandName::Completions,
            Command::Man { .. } => CommandName::Man,
        }
    }
}

/// `--time-scale`: a finite factor within [`crate::emulate::SCALE_RANGE`].
fn time_scale(s: &str) -> Result<f64, String> {
    let (lo, hi) = crate::emulate::SCALE_RANGE;
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a time scale from {lo} to {hi} (1 is real time)")),
    }
}
