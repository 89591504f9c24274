//! The argument groups every command shares, checked by clap when the
//! command line is parsed, with no system call (ripgrep's habit: validate
//! first, resolve later): TARGET as a typed spec, the I/O engine and the
//! results store ([`Common`]), and a writing test's consent ([`WriteArgs`]).
//! Each measuring test flattens them into its own arguments; the CLI
//! resolves them once into what the runner needs.

use std::path::PathBuf;

use crate::safety::ranges::Range;
use crate::targets::real::EngineChoice;
use crate::targets::spec::TargetSpec;

/// A size argument (`4M`, `16KiB`, `0x1000`), checked at parse time.
pub fn size(text: &str) -> Result<u64, String> {
    crate::units::parse_size(text).map_err(|e| e.to_string())
}

/// An erase size: a whole number of bytes above zero (0 would divide
/// nothing).
/// An erase size: whole multiples of 16 KiB, the smallest allocation unit
/// an SD card can declare (SD Physical Layer spec 4.10.2, AU_SIZE; eMMC
/// erase groups are multiples of 512 KiB), checked before anything runs
/// (`--erase-size 5000` was taken and failed mid-run).
pub fn erase_size(text: &str) -> Result<u64, String> {
    match size(text)? {
        0 => Err("an erase size of 0 bytes cannot be; give 4M, 8M ...".into()),
        n if !n.is_multiple_of(16 << 10) => Err(format!(
            "{n} bytes is not a whole number of 16 KiB, the smallest allocation unit a card can have; give \
             4M, 8M, 12M ..."
        )),
        n => Ok(n),
    }
}

/// A stored run's id (`results show abc` said "invalid digit
/// found in string").
pub fn run_id(text: &str) -> Result<i64, String> {
    match text.parse::<i64>() {
        Ok(n) if n >= 1 => Ok(n),
        // Short: clap prints it after "invalid value 'abc' for '<ID>': ",
        // unwrapped.
        _ => Err("not a run id; see `flashlab results list`".into()),
    }
}

/// An `OFFSET+LENGTH` argument, checked at parse time.
pub fn range(text: &str) -> Result<Range, String> {
    crate::safety::ranges::parse(text).map_err(|e| e.to_string())
}

/// TARGET as the user typed it (for the document and messages) and as
/// parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub text: String,
    pub spec: TargetSpec,
}

impl Target {
    /// The built-in simulated card, taken when no TARGET is given.
    pub fn default_card() -> Target {
        let text = crate::targets::spec::DEFAULT_TARGET;
        Target {
            text: text.to_string(),
            spec: TargetSpec::parse(text).expect("the default target parses"),
        }
    }
}

/// clap's value parser for TARGET.
pub fn target(text: &str) -> Result<Target, String> {
    TargetSpec::parse(text)
        .map(|spec| Target {
            text: text.to_string(),
            spec,
        })
        .map_err(|e| {
            format!(
                "bad target '{text}': {e} (a TARGET is a block device such as /dev/mmcblk0, a regular file, or \
                 sim:PROFILE[,key=value...])"
            )
        })
}

/// `--engine`: clap's side of [`EngineChoice`] (the target layer knows
/// nothing of clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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

/// Where a measuring command runs, how it reads and writes a real target,
/// and where its run is saved.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// A block device (/dev/mmcblk0), a regular file, or
    /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
    /// simulated card; `flashlab sim list` names the others).
    #[arg(value_name = "TARGET", value_parser = target)]
    pub target: Option<Target>,
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
    /// Say each step as it ends (device-seconds and wall time) and what a
    /// simulated card will write.
    #[arg(short, long)]
    pub verbose: bool,
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
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WriteArgs {
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
    /// Device-seconds each writing step may take (default 180). A step
    /// that has no answer when its budget ends says "unsure: stopped after
    /// N device-seconds" and what it saw.
    #[arg(long, value_name = "SECONDS", value_parser = budget)]
    pub budget: Option<f64>,
}

/// `--budget SECONDS`: a positive number of seconds, at most a week.
pub fn budget(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 7.0 * 86400.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a budget: give device-seconds, more than 0 and at most 604800 (a week)"
        )),
    }
}
