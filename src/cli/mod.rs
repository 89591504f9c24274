//! Command-line parsing and dispatch, nothing else. clap parses and validates
//! every argument, TARGET and sizes included, with no system calls
//! (ripgrep's habit); the shared groups are resolved once into what the
//! runner needs ([`Resolved`]); [`crate::command`] runs the command and a
//! [`Format`](crate::format::Format) writes its run document. Exit codes
//! come from the error's kind.

mod output;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::args::{Common, Engine, WriteArgs};
use crate::command::{debug, offline, probe, restore, results};
use crate::document::bodies::{Body, ReportBody, ReportWritten};
use crate::document::{ErrorBody, RunDocument};
use crate::error::CliResult;
use crate::format::Format;
use crate::measure::registry::TestCommand;
use crate::registers::RegisterKind;
use crate::runner::Resolved;
use crate::runner::session::Consent;
use crate::safety::ranges::Range;
use crate::target::real::EngineChoice;

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
  flashlab report 3 7 run.json -o comparison.html")]
    Report {
        /// Run ids (`flashlab results list`) or JSON files.
        #[arg(required = true, value_name = "ID|FILE")]
        runs: Vec<String>,
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
        #[arg(long, value_name = "DIR")]
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
  sudo flashlab emulate --cleanup                     remove what a killed emulation left
  sudo flashlab emulate --cleanup --force PID         end a stopped emulation that hangs its device")]
    Emulate {
        /// The card: sim:PROFILE[,key=value...] (`flashlab sim list`).
        #[arg(value_name = "SPEC", required_unless_present = "cleanup")]
        spec: Option<String>,
        /// Wall seconds per second of the card's time: 1 is real time, 0.1
        /// ten times faster.
        #[arg(long, default_value_t = 1.0, value_parser = time_scale, value_name = "F")]
        time_scale: f64,
        /// Keep the card's data in FILE (a regular file of the card's size,
        /// made if missing) instead of memory, so a filesystem on it
        /// survives a restart.
        #[arg(long, value_name = "FILE")]
        backing: Option<PathBuf>,
        /// Print the device as one JSON document on stdout (the summary
        /// still goes to stderr at the end).
        #[arg(long)]
        json: bool,
        /// Only detach and unmount what emulations killed earlier left.
        #[arg(long, conflicts_with_all = ["spec", "backing", "time_scale"])]
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
        target: crate::args::Target,
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
    },
    /// A stored run, as its command printed it.
    #[command(after_help = "Examples:
  flashlab results show 3
  flashlab results show 3 --json")]
    Show {
        /// The run's id (`flashlab results list`).
        #[arg(value_parser = crate::args::run_id)]
        id: i64,
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
        profile: String,
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
    fn name(&self) -> &'static str {
        match self {
            Command::Info { .. } => "info",
            Command::Probe { .. } => "probe",
            Command::Test(t) => t.name(),
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
            Command::Emulate { .. } => "emulate",
            Command::Import {
                source: ImportSource::Flashbench { .. },
            } => "import flashbench",
            Command::Completions { .. } => "completions",
            Command::Man { .. } => "man",
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
    doc.extras.error.set(ErrorBody {
        kind: kind.into(),
        exit_code: e.exit as i32,
        message: e.message.clone(),
        hint: e.hint.clone(),
    });
    doc
}

/// What a command gives to print.
enum Output {
    /// A run document, in the format chosen for the run (text or JSON).
    Doc(Box<RunDocument>),
    /// A document in a format of its own (`scatter --csv`, `sim show
    /// --toml`).
    As(Box<RunDocument>, Box<dyn Format>),
    /// Text of its own (completions, the manual page).
    Raw(String),
}

/// `--time-scale`: a finite factor within [`crate::emulate::SCALE_RANGE`].
fn time_scale(s: &str) -> Result<f64, String> {
    let (lo, hi) = crate::emulate::SCALE_RANGE;
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a time scale from {lo} to {hi} (1 is real time)")),
    }
}

/// The format of a run's documents, chosen once from `--json`.
fn chosen(json: bool) -> Box<dyn Format> {
    if json {
        Box::new(crate::format::json::Json)
    } else {
        Box::new(crate::format::text::Text)
    }
}

/// `doc` on stdout in `format`; a format with nothing to say about it is a
/// usage error (exit 2).
fn print(doc: &RunDocument, format: &dyn Format) -> i32 {
    match format.render(&crate::format::one(doc)) {
        Ok(text) => {
            crate::out!("{text}");
            0
        }
        Err(e) => {
            let e = crate::error::CliError::usage(e.why).hint(e.fix);
            crate::errln!("{e}");
            e.exit as i32
        }
    }
}

/// What bare `flashlab` prints: the three commands to start with.
const START: &str = "flashlab: what your flash storage really is and how it behaves

  flashlab probe                  every step on the built-in simulated card
  flashlab probe /dev/mmcblk0     a real card, reading only (--write: all steps,
                                  its data journalled, restored and verified)
  flashlab results list           the runs kept so far

`flashlab --help` lists every command, `flashlab COMMAND --help` its options.
";

/// Run flashlab with the process arguments; returns the exit code.
pub fn main() -> i32 {
    // No command at all: where to start, not every command and option
    // (61 lines and exit 2).
    if std::env::args_os().len() == 1 {
        crate::out!("{}", START);
        return 0;
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let command = std::env::args()
                .skip(1)
                .find(|a| !a.starts_with('-'))
                .unwrap_or_default();
            // The option clap refused, where it names one: the hint points
            // at its help (a second, generic hint under clap's
            // own "try '--help'").
            let arg = e
                .get(clap::error::ContextKind::InvalidArg)
                .map(|a| a.to_string())
                .and_then(|a| a.split_whitespace().next().map(str::to_string))
                .filter(|a| a.starts_with('-') || a.starts_with('<'));
            // The command as typed, subcommand included (`results show`).
            let words: Vec<String> = std::env::args()
                .skip(1)
                .filter(|a| !a.starts_with('-'))
                .take_while(|a| a.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                .take(2)
                .collect();
            use clap::error::ErrorKind;
            let hint = match (e.kind(), &arg, command.is_empty()) {
                (ErrorKind::InvalidValue | ErrorKind::ValueValidation, Some(a), false) => {
                    format!("`flashlab {} --help` describes {a}", words.join(" "))
                }
                (ErrorKind::UnknownArgument, _, false) => format!("`flashlab {command} --help` lists its options"),
                _ => "`flashlab --help` lists the commands, `flashlab COMMAND --help` their options".to_string(),
            };
            // --json asked for one document even for a bad command line.
            if e.use_stderr() && std::env::args().any(|a| a == "--json") {
                let err = crate::error::CliError::usage(e.kind().to_string()).hint(hint.clone());
                print(&error_document(&command, &err), chosen(true).as_ref());
            }
            // clap's own message; usage errors exit 2, --help/--version 0.
            // An error goes through stderr's writer, which wraps it between
            // words on a terminal ("give 4M, 8M, 12|M").
            // Its "For more information, try '--help'." gives way to the
            // hint below, which names the help that answers (two
            // hints, one generic).
            if e.use_stderr() {
                let text = e.render().to_string();
                let own: Vec<&str> = text
                    .trim_end()
                    .lines()
                    .filter(|l| !l.starts_with("For more information, try"))
                    .collect();
                crate::errln!("{}", own.join("\n").trim_end());
            } else {
                let _ = e.print();
            }
            if e.use_stderr() {
                use std::io::IsTerminal;
                if std::io::stderr().is_terminal() {
                    crate::errln!("{}", crate::console::wrap(&hint, "hint: ", "  "));
                } else {
                    crate::errln!("hint: {hint}");
                }
            }
            return e.exit_code();
        }
    };
    let format = chosen(cli.json);
    let as_json = cli.json;
    let command = cli.command.name();
    let code = match run(cli) {
        Ok(Output::Doc(doc)) => print(&doc, format.as_ref()),
        Ok(Output::As(doc, own)) => print(&doc, own.as_ref()),
        Ok(Output::Raw(text)) => {
            crate::out!("{text}");
            0
        }
        Err(e) => {
            // A failure still prints one document with --json, and what
            // completed before it otherwise.
            if as_json {
                print(&error_document(command, &e), format.as_ref());
            } else if let Some(doc) = &e.partial {
                print(doc, format.as_ref());
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

/// The shared groups, resolved once: the target (the built-in card when
/// none is given, said so), the engine (the command's own --engine, else
/// one given before the command, else auto), the consent, the store.
fn resolve(common: &Common, write: Option<&WriteArgs>, before: Option<Engine>) -> Resolved {
    let target = common.target.clone().unwrap_or_else(|| {
        let line = format!(
            "no TARGET given: measuring {}, the built-in simulated card",
            crate::target::spec::DEFAULT_TARGET
        );
        crate::errln!("{}", crate::console::wrap(&line, "", ""));
        crate::args::Target::default_card()
    });
    crate::console::stdio::set_verbose(common.verbose);
    Resolved {
        target,
        engine: engine(common.engine, before),
        consent: write.map(Consent::from).unwrap_or_default(),
        store: if common.no_store {
            None
        } else {
            common.db.clone().or_else(crate::store::default_path)
        },
    }
}

fn engine(own: Option<Engine>, before: Option<Engine>) -> EngineChoice {
    own.or(before).unwrap_or(Engine::Auto).into()
}

fn run(cli: Cli) -> CliResult<Output> {
    let before = cli.engine_before;
    let json = cli.json;
    let mut result = dispatch(cli.command, json, before);
    // A Ctrl-C or SIGTERM that came after the last write (while the last
    // step restored its data) is honoured now: the run stops with its
    // signal's exit code, its results printed and saved.
    if let (Some(signal), Ok(Output::Doc(_))) = (crate::safety::signals::pending(), &result)
        && let Ok(Output::Doc(doc)) = std::mem::replace(&mut result, Ok(Output::Raw(String::new())))
    {
        result = Err(crate::error::interrupted(signal).with_document(*doc));
    }
    result
}

fn dispatch(command: Command, json: bool, before: Option<Engine>) -> CliResult<Output> {
    let doc = match command {
        Command::Info { common, registers } => crate::command::info(&resolve(&common, None, before), registers)?,
        Command::Test(t) => {
            let r = resolve(t.common(), t.consent(), before);
            let doc = crate::command::test(&t, &r)?;
            // scatter --csv: the points, in the format that draws them elsewhere.
            if let (TestCommand::Scatter(a), false) = (&t, json)
                && a.csv
            {
                return Ok(Output::As(Box::new(doc), Box::new(crate::format::csv::Csv)));
            }
            doc
        }
        Command::Probe {
            common,
            erase_size,
            html,
            write,
        } => {
            let r = resolve(&common, Some(&write), before);
            // A report that cannot be written is refused before the probe, not after.
            if let Some(path) = &html {
                output::check_report_path(path, &[&r.target.text])?;
            }
            let doc = probe::probe(&r, erase_size)?;
            if let Some(path) = html {
                output::write_report(&path, &crate::format::one(&doc))?;
                crate::errln!("report written to {}", path.display());
            }
            doc
        }
        Command::Results { db, action } => match action {
            ResultsAction::List { device } => results::list(db.as_deref(), device.as_deref())?,
            ResultsAction::Show { id } => results::show(db.as_deref(), id)?,
            ResultsAction::Compare { runs } => results::compare(db.as_deref(), &runs)?,
            ResultsAction::Export { id } => return Ok(Output::Raw(results::export(db.as_deref(), id)?)),
            ResultsAction::Import { file } => results::import(db.as_deref(), &file)?,
        },
        Command::Report { runs, output, db } => {
            // A name from the runs where none is given (`report 1`
            // refused without -o): ids as they are, files by their stem.
            let output = output.unwrap_or_else(|| {
                let names: Vec<String> = runs
                    .iter()
                    .map(|w| {
                        let stem = Path::new(w)
                            .file_stem()
                            .map_or(w.clone(), |s| s.to_string_lossy().into_owned());
                        stem.chars()
                            .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' })
                            .collect()
                    })
                    .collect();
                PathBuf::from(format!("flashlab-report-{}.html", names.join("-")))
            });
            output::check_report_path(&output, &[])?;
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
            output::check_report_path(&output, &targets)?;
            output::write_report(&output, &loaded)?;
            let mut doc = RunDocument::new("report", None);
            doc.body = Body::Report(ReportBody {
                report: ReportWritten {
                    path: output.display().to_string(),
                    runs,
                },
            });
            doc.finish(None);
            doc
        }
        Command::Sim { action } => match action {
            SimAction::List => offline::sim_list(),
            SimAction::Show { profile, toml: true } => {
                return Ok(Output::As(
                    Box::new(offline::sim_show(&profile)?),
                    Box::new(crate::format::toml::Toml),
                ));
            }
            SimAction::Show { profile, toml: false } => offline::sim_show(&profile)?,
            SimAction::Reproduce { experiment } => offline::sim_reproduce(&experiment)?,
        },
        Command::Emulate {
            spec,
            time_scale,
            backing,
            json,
            cleanup,
            force,
        } => {
            match (cleanup, spec) {
                (true, _) => crate::command::emulate::cleanup(force)?,
                (false, Some(spec)) => {
                    let format = chosen(json);
                    crate::command::emulate::run(
                        &crate::emulate::Options {
                            spec,
                            time_scale,
                            backing,
                        },
                        &|doc| {
                            print(doc, &*format);
                        },
                    )?
                }
                (false, None) => {
                    return Err(crate::error::CliError::usage("emulate needs a SPEC (sim:PROFILE)")
                        .hint("for example `flashlab emulate sim:demo`; `flashlab sim list` names the profiles"));
                }
            }
            return Ok(Output::Raw(String::new()));
        }
        Command::Import {
            source:
                ImportSource::Flashbench {
                    files,
                    column,
                    device,
                    command,
                    db,
                    no_store,
                },
        } => crate::command::import::flashbench(&crate::command::import::Options {
            inputs: files,
            column,
            device,
            command,
            store: if no_store {
                None
            } else {
                db.or_else(crate::store::default_path)
            },
        })?,
        // They print a script and a manual page, never a JSON document
        // (--json printed roff).
        ref c @ (Command::Completions { .. } | Command::Man { .. }) if json => {
            let example = if matches!(c, Command::Man { .. }) {
                "`flashlab man > flashlab.1`"
            } else {
                "`flashlab completions bash > flashlab.bash`"
            };
            return Err(crate::error::CliError::usage(
                "man and completions print a manual page or a shell script, not JSON".to_string(),
            )
            .hint(format!("drop --json, as in {example}")));
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "flashlab", &mut out);
            return Ok(Output::Raw(String::from_utf8_lossy(&out).into_owned()));
        }
        Command::Man { command, dir } => return man(&command, dir.as_deref()),
        Command::Decode { register, hex, mmc } => offline::decode(register.into(), &hex.join(" "), mmc)?,
        Command::Restore {
            what,
            force,
            set_aside,
            journal_dir,
            engine: e,
        } => restore::run(what.as_deref(), force, set_aside, journal_dir, engine(e.engine, before))?,
        Command::Debug {
            action:
                DebugAction::WritePattern {
                    target,
                    ranges,
                    passes,
                    pause_ms,
                    opts,
                    engine: e,
                },
        } => debug::run(
            &target,
            ranges,
            passes,
            pause_ms,
            &Consent::from(&opts),
            engine(e.engine, before),
        )?,
    };
    Ok(Output::Doc(Box::new(doc)))
}

/// Every page's command: flashlab itself, then each visible command and
/// its own commands, named as the pages cite each other (flashlab-probe,
/// flashlab-results-list).
/// (page name, the command as typed, the command).
type Page = (String, String, clap::Command);

fn man_pages() -> Vec<Page> {
    use clap::CommandFactory;
    fn walk(prefix: &str, typed: &str, c: &clap::Command, out: &mut Vec<Page>) {
        for sub in c
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        {
            let name = format!("{prefix}-{}", sub.get_name());
            let typed = format!("{typed} {}", sub.get_name());
            // The page's title and its citations of its own commands
            // (clap_mangen names them display name, dash, command); the
            // synopsis as typed.
            // NAME is the help's first clause, DESCRIPTION all of it and
            // where the rest is (a DESCRIPTION that repeated NAME
            // word for word).
            let about = sub
                .get_long_about()
                .or(sub.get_about())
                .map(ToString::to_string)
                .unwrap_or_default();
            let first = first_clause(&about);
            let description = format!(
                "{about}\n\nEvery option is below, and examples after them; --json, --db and the I/O engines are \
                 described in flashlab(1) and README.md."
            );
            let page = sub
                .clone()
                .display_name(name.clone())
                .bin_name(typed.clone())
                .about(first)
                .long_about(description)
                .version(env!("CARGO_PKG_VERSION"))
                .disable_help_subcommand(true);
            out.push((name.clone(), typed.clone(), page));
            walk(&name, &typed, sub, out);
        }
    }
    // No page for clap's `help` command, so none cited.
    let top = Cli::command().disable_help_subcommand(true);
    let mut out = vec![("flashlab".to_string(), "flashlab".to_string(), top.clone())];
    walk("flashlab", "flashlab", &top, &mut out);
    out
}

/// A help text up to its first "; " or ". " outside parentheses and
/// backquotes (a man page's NAME line), without a closing period.
fn first_clause(text: &str) -> String {
    let (mut depth, mut quoted) = (0i32, false);
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            '`' => quoted = !quoted,
            '.' | ';' if depth == 0 && !quoted && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) => {
                return chars[..i].iter().collect::<String>().trim().to_string();
            }
            _ => {}
        }
    }
    text.trim().trim_end_matches('.').to_string()
}

fn render_man(c: clap::Command) -> CliResult<String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(c)
        .render(&mut out)
        .map_err(|e| crate::error::CliError::failed(format!("cannot render the manual: {e}")))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `flashlab man [COMMAND...] [--dir DIR]`.
fn man(command: &[String], dir: Option<&std::path::Path>) -> CliResult<Output> {
    let pages = man_pages();
    let Some(dir) = dir else {
        let want = std::iter::once("flashlab")
            .chain(command.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let Some((_, _, c)) = pages.iter().find(|(_, typed, _)| *typed == want) else {
            let names: Vec<&str> = pages
                .iter()
                .filter_map(|(_, t, _)| t.strip_prefix("flashlab "))
                .collect();
            return Err(
                crate::error::CliError::usage(format!("no manual page for `{}`", command.join(" ")))
                    .hint(format!("pages: {}", names.join(", "))),
            );
        };
        return Ok(Output::Raw(render_man(c.clone())?));
    };
    if !dir.is_dir() {
        return Err(
            crate::error::CliError::usage(format!("{} is not a directory", dir.display()))
                .hint("create it first, as in `sudo mkdir -p /usr/local/share/man/man1`"),
        );
    }
    // Every page checked before the first is written: all or none.
    let files: Vec<(std::path::PathBuf, String)> = pages
        .into_iter()
        .map(|(n, _, c)| Ok((dir.join(format!("{n}.1")), render_man(c)?)))
        .collect::<CliResult<_>>()?;
    // A page in use keeps the hint that says how to free it.
    let cli = |e: crate::safety::output::OutputError| {
        let in_use = matches!(e, crate::safety::output::OutputError::InUse { .. });
        let c = crate::error::CliError::from(e);
        match in_use {
            true => c,
            false => c.hint("give a directory of manual pages, as /usr/local/share/man/man1 (sudo to write there)"),
        }
    };
    for (p, _) in &files {
        crate::safety::output::check(p).map_err(cli)?;
    }
    for (p, text) in &files {
        crate::safety::output::write_output(p, text.as_bytes()).map_err(cli)?;
    }
    crate::errln!(
        "wrote {} manual pages to {}; `man flashlab` lists them",
        files.len(),
        dir.display()
    );
    Ok(Output::Raw(String::new()))
}

#[cfg(test)]
mod tests {
    use super::first_clause;

    #[test]
    fn a_man_name_is_the_first_clause_outside_parentheses_and_quotes() {
        assert_eq!(
            first_clause("How many AUs (the FAT area; writes) are fast. More here."),
            "How many AUs (the FAT area; writes) are fast"
        );
        assert_eq!(
            first_clause("Every parameter of a profile (or `PROFILE,key=value...`), with units."),
            "Every parameter of a profile (or `PROFILE,key=value...`), with units"
        );
        assert_eq!(
            first_clause("Everything at once: a, b; then c."),
            "Everything at once: a, b"
        );
        assert_eq!(first_clause("Reads sim:FILE.toml files"), "Reads sim:FILE.toml files");
    }
}
