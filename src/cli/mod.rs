//! Command-line parsing (clap, no syscalls) and dispatch. Each command lives in its
//! own file and turns typed module errors into [`CliError`]s with hints.

mod decode;
mod info;
mod measure;
mod probe;
mod resolve;
mod restore;
mod sim;
mod write;

use clap::{Parser, Subcommand};

use crate::error::{CliError, CliResult};
use crate::registers::RegisterKind;
use crate::seam::real::EngineChoice;
use crate::seam::spec::DEFAULT_TARGET;

/// What flash storage really is and how it really behaves.
#[derive(Debug, Parser)]
#[command(name = "flashlab", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Print exactly one JSON document on stdout and nothing else there.
    #[arg(long, global = true)]
    pub json: bool,

    /// I/O engine for real targets: psync, io_uring, or auto (io_uring when the
    /// queue depth is above 1).
    #[arg(long, global = true, value_enum, default_value_t = EngineChoice::Auto)]
    pub engine: EngineChoice,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Identify a device: sizes, block sizes, transport, partitions, mounts, and the
    /// SD/MMC registers decoded (read-only).
    Info {
        /// Block device, regular file, or sim:PROFILE[,key=value...].
        #[arg(default_value = DEFAULT_TARGET)]
        target: String,
    },
    /// Erase-block (AU) and page size from read latencies at 2^n and 3x2^n
    /// boundaries, with a confidence (read-only).
    Align {
        #[arg(default_value = DEFAULT_TARGET)]
        target: String,
    },
    /// How many AUs the card keeps open for in-order and random writes: an
    /// automatic sweep that stops each run once it collapses (writes; the data
    /// is preserved unless --no-preserve).
    OpenAu {
        #[arg(default_value = DEFAULT_TARGET)]
        target: String,
        /// Only the random-order sweep (flashbench --open-au --random).
        #[arg(long, conflicts_with = "linear")]
        random: bool,
        /// Only the in-order sweep.
        #[arg(long)]
        linear: bool,
        /// Erase size (default: align's estimate).
        #[arg(long, value_name = "SIZE")]
        erase_size: Option<String>,
        /// Chunk written by the sweep (default: the page, doubled while the AU
        /// holds more than 4096 of them).
        #[arg(long, value_name = "SIZE")]
        chunk: Option<String>,
        /// Most open AUs tried (default: 32, or the most whose AUs fit on
        /// the target; given explicitly, a sweep that does not fit is refused).
        #[arg(long)]
        max: Option<u64>,
        /// Also every chunk size from the erase size down, at one AU, at the
        /// limit and one past it (flashbench's table).
        #[arg(long)]
        full: bool,
        #[command(flatten)]
        opts: write::WriteOpts,
    },
    /// How many leading AUs take small random writes cheaply (the FAT area;
    /// writes, preserved unless --no-preserve).
    Fat {
        #[arg(default_value = DEFAULT_TARGET)]
        target: String,
        #[arg(long, value_name = "SIZE")]
        erase_size: Option<String>,
        /// Leading AUs examined.
        #[arg(long, default_value_t = measure::DEFAULT_FAT_AUS)]
        max: u64,
        #[command(flatten)]
        opts: write::WriteOpts,
    },
    /// Everything at once: identify, align, then open-au and fat (these write:
    /// on a real target only with --write, data preserved), and advice.
    Probe {
        #[arg(default_value = DEFAULT_TARGET)]
        target: String,
        #[command(flatten)]
        opts: write::WriteOpts,
    },
    /// Read latency of every block of a region, in order (read-only).
    Scatter {
        #[arg(default_value = DEFAULT_TARGET)]
        target: String,
        #[arg(long, default_value = "0")]
        offset: String,
        #[arg(long, default_value = "8M")]
        length: String,
        /// Read size (default: 4 KiB or the logical block).
        #[arg(long, value_name = "SIZE")]
        block: Option<String>,
        /// Every point as CSV (offset_bytes,latency_ns) on stdout.
        #[arg(long)]
        csv: bool,
    },
    /// Simulated cards: list the built-in profiles, show one's parameters.
    Sim {
        #[command(subcommand)]
        action: SimAction,
    },
    /// Decode an SD/MMC register pasted as hex (sysfs, spaced bytes, 0x words).
    Decode {
        #[arg(value_enum)]
        register: RegisterKind,
        /// The register's hex; several arguments are joined with spaces.
        #[arg(required = true, num_args = 1..)]
        hex: Vec<String>,
        /// Decode CID/CSD with the MMC/eMMC layout instead of SD's.
        #[arg(long)]
        mmc: bool,
    },
    /// List pending preservation journals, or restore one (JOURNAL or TARGET) and
    /// verify it, after a crash or power cut during a writing test.
    Restore {
        /// A journal file or the target it belongs to; none lists them.
        what: Option<String>,
        /// Restore even if the target's size or serial no longer matches.
        #[arg(long)]
        force: bool,
        #[arg(long, value_name = "DIR")]
        journal_dir: Option<std::path::PathBuf>,
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
        target: String,
        /// OFFSET+LENGTH, repeatable.
        #[arg(long = "range", required = true)]
        ranges: Vec<String>,
        #[arg(long, default_value_t = 1)]
        passes: u32,
        /// Sleep between writes (for signal tests).
        #[arg(long, default_value_t = 0)]
        pause_ms: u64,
        #[command(flatten)]
        opts: write::WriteOpts,
    },
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

/// Run flashlab with the process arguments; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints its own message; usage errors exit 2, --help/--version 0.
            let _ = e.print();
            return e.exit_code();
        }
    };
    let code = match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            crate::errln!("{e}");
            e.exit as i32
        }
    };
    // Output that could not be written fails the run, but only now, once any
    // data a writing test changed is back (SIGPIPE is ignored, as Rust sets it
    // up, so a closed pipe is an error here instead of a kill mid-test).
    match crate::output::stdio::finish() {
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

fn run(cli: Cli) -> CliResult<()> {
    match cli.command {
        Command::Info { target } => info::run(&target, cli.engine, cli.json),
        Command::Sim { action } => sim::run(action, cli.json),
        Command::Align { target } => measure::align(&target, cli.engine, cli.json),
        Command::Probe { target, opts } => probe::run(&target, &opts, cli.engine, cli.json),
        Command::OpenAu {
            target,
            random,
            linear,
            erase_size,
            chunk,
            max,
            full,
            opts,
        } => measure::open_au(
            &target,
            &measure::OpenAuArgs {
                erase: erase_size,
                chunk,
                max,
                random_only: random,
                linear_only: linear,
                full,
            },
            &opts,
            cli.engine,
            cli.json,
        ),
        Command::Fat {
            target,
            erase_size,
            max,
            opts,
        } => measure::fat(&target, &erase_size, max, &opts, cli.engine, cli.json),
        Command::Scatter {
            target,
            offset,
            length,
            block,
            csv,
        } => measure::scatter(&target, &offset, &length, &block, csv, cli.engine, cli.json),
        Command::Decode { register, hex, mmc } => decode::run(register, &hex.join(" "), mmc, cli.json),
        Command::Restore {
            what,
            force,
            journal_dir,
        } => restore::run(what.as_deref(), force, journal_dir, cli.engine, cli.json),
        Command::Debug {
            action:
                DebugAction::WritePattern {
                    target,
                    ranges,
                    passes,
                    pause_ms,
                    opts,
                },
        } => {
            let declared = ranges
                .iter()
                .map(|r| crate::safety::ranges::parse(r))
                .collect::<Result<Vec<_>, _>>()
                .map_err(write::safety_error)?;
            write::write_pattern(&target, declared, passes, pause_ms, &opts, cli.engine, cli.json)
        }
    }
}

/// Turn any displayable module error into a usage error with a hint.
pub(crate) fn usage_err(e: impl std::fmt::Display, hint: &str) -> CliError {
    CliError::usage(e.to_string()).hint(hint)
}
