//! Everything that leaves flashlab for a person or a script, one format a
//! file behind one trait (hyperfine's `export/`): terminal text, JSON, CSV
//! (scatter's points), TOML (a simulated card's parameters) and the HTML
//! report. Each reads run documents and nothing else; the CLI picks one
//! and writes what it returns (stdout, or a file for the report).

pub mod csv;
pub mod html;
pub mod json;
pub mod text;
pub mod toml;

use crate::document::{CommandName, RunDocument};

/// A run document this format has nothing to say about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct FormatError {
    pub why: String,
    pub fix: String,
}

/// The formats a run's document can be written in (fio's
/// `--output-format`): `--format`, with `--json` for `--format json`. Each
/// picks its one [`Format`]; one that has nothing to say about a command's
/// document refuses it (CSV is scatter's points, TOML a simulated card).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatKind {
    /// For a person at a terminal (the default).
    Text,
    /// The JSON contract: exactly one document on stdout.
    Json,
    /// scatter's points.
    Csv,
    /// A simulated card's parameters (`sim show`), as `sim:FILE.toml` reads them.
    Toml,
    /// The HTML report of the run, on stdout.
    Html,
}

impl FormatKind {
    pub fn format(self) -> Box<dyn Format> {
        match self {
            FormatKind::Text => Box::new(text::Text),
            FormatKind::Json => Box::new(json::Json),
            FormatKind::Csv => Box::new(csv::Csv),
            FormatKind::Toml => Box::new(toml::Toml),
            FormatKind::Html => Box::new(html::Html),
        }
    }

    /// The word `--format` takes.
    pub fn word(self) -> &'static str {
        match self {
            FormatKind::Text => "text",
            FormatKind::Json => "json",
            FormatKind::Csv => "csv",
            FormatKind::Toml => "toml",
            FormatKind::Html => "html",
        }
    }

    /// Why this format has nothing to say about `command`'s document, and
    /// what does; None where it serves it. Asked before the command runs,
    /// so no device time is spent on a run nothing can print.
    pub fn refuses(self, command: &CommandName) -> Option<(String, String)> {
        // `results show` prints a stored run: the run decides, and the
        // format refuses it there if it must (nothing is measured).
        let shown = *command == CommandName::ResultsShow;
        let serves = match self {
            FormatKind::Text | FormatKind::Json => true,
            FormatKind::Csv => {
                shown
                    || *command == CommandName::Test(crate::measure::TestName::Scatter)
                    || *command == CommandName::Batch
            }
            FormatKind::Toml => *command == CommandName::SimShow,
            // A batch is many runs: `report --batch ID` draws them.
            FormatKind::Html => shown || (command.is_measuring() && *command != CommandName::Batch),
        };
        let (what, which) = match self {
            FormatKind::Csv => (
                "CSV holds scatter's points and a batch's rows",
                "`flashlab scatter TARGET --format csv`",
            ),
            FormatKind::Html if *command == CommandName::Batch => (
                "a batch is many runs, drawn side by side by `report --batch`",
                "`flashlab report --batch ID`",
            ),
            FormatKind::Toml => (
                "TOML holds a simulated card's parameters",
                "`flashlab sim show PROFILE --format toml`",
            ),
            FormatKind::Text | FormatKind::Json | FormatKind::Html => (
                "the HTML report draws a measuring run",
                "`flashlab probe --format html > card.html`, or `flashlab report ID`",
            ),
        };
        (!serves).then(|| {
            (
                format!("--format {} does not fit {command}: {what}", self.word()),
                format!("use --format text or json here, or {which}"),
            )
        })
    }
}

/// One output format.
pub trait Format {
    /// The documents (with the names they go by: a run id, a file) as this
    /// format's text. Every format takes one; the report takes several (a
    /// comparison).
    fn render(&self, runs: &[(String, RunDocument)]) -> Result<String, FormatError>;
}

/// A document as the only run of a format's input.
pub fn one(doc: &RunDocument) -> [(String, RunDocument); 1] {
    let id = doc.target.as_ref().map_or(String::new(), |t| t.spec.clone());
    [(id, doc.clone())]
}

/// The one-screen summary of a run: the device, then each test's lines
/// (is it genuine, how fast, then its geometry). probe's text and the HTML
/// report both print it first.
pub fn summary(doc: &RunDocument) -> Vec<(crate::measure::topic::Topic, String)> {
    let mut out = vec![(
        crate::measure::topic::Topic::Device,
        crate::document::device::of(doc).name,
    )];
    out.extend(doc.results.summary());
    out
}
