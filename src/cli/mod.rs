//! Command-line parsing and dispatch, nothing else. clap parses and validates
//! every argument, TARGET and sizes included, with no system calls
//! (ripgrep's habit); the shared groups are resolved once into what the
//! runner needs ([`Resolved`]); [`crate::command`] runs the command and a
//! [`Format`](crate::format::Format) writes its run document. Exit codes
//! come from the error's kind.

mod clap_errors;
mod completions;
mod dispatch;
mod man;
mod output;
mod schema;

pub use schema::{Cli, Command, DebugAction, ImportSource, Register, ResultsAction, SimAction};

use clap::Parser;

use crate::document::{ErrorBody, RunDocument};
use crate::format::{Format, FormatKind};

/// `--json`'s answer when a command fails: one document on stdout, what
/// completed (if anything did) with an `error` beside it.
fn error_document(command: crate::document::CommandName, e: &crate::error::CliError) -> RunDocument {
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

/// The format of a run's documents, chosen once: `--format`, or `--json`
/// (its alias), else text.
fn chosen(json: bool, format: Option<FormatKind>) -> FormatKind {
    match (json, format) {
        (true, _) => FormatKind::Json,
        (false, f) => f.unwrap_or(FormatKind::Text),
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
    // The width where no terminal says, read here once like every other
    // variable (Places): nothing below the CLI reads the environment.
    crate::console::set_columns(std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()));
    // No command at all: where to start, not every command and option
    // (61 lines and exit 2).
    if std::env::args_os().len() == 1 {
        crate::out!("{}", START);
        return 0;
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_errors::report(e),
    };
    let kind = chosen(cli.json, cli.format);
    let format = kind.format();
    let command = cli.command.name();
    if let Some((why, hint)) = kind.refuses(&command) {
        let e = crate::error::CliError::usage(why).hint(hint);
        crate::errln!("{e}");
        return e.exit as i32;
    }
    let code = match dispatch::run(cli, kind) {
        Ok(Output::Doc(doc)) => print(&doc, format.as_ref()),
        Ok(Output::As(doc, own)) => print(&doc, own.as_ref()),
        Ok(Output::Raw(text)) => {
            crate::out!("{text}");
            0
        }
        Err(e) => {
            // A failure still prints one document with --json, and what
            // completed before it otherwise.
            match (kind, &e.partial) {
                (FormatKind::Json, _) => {
                    print(&error_document(command, &e), format.as_ref());
                }
                (FormatKind::Text, Some(doc)) => {
                    print(doc, format.as_ref());
                }
                _ => {}
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
