//! `flashlab results list|show|compare|export|import`: the stored runs.
//! Each gives a run document (or, for export, the stored one's text), so
//! the text and JSON renderers show them as they show everything else.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::document::RunDocument;
use crate::error::{CliError, CliResult};
use crate::report::metrics;
use crate::store::{self, Imported, RunRow, Store, StoreError};

/// The store a `results` command reads: `--db`, else the default.
pub fn path(db: Option<&Path>) -> CliResult<PathBuf> {
    db.map(Path::to_path_buf).or_else(store::default_path).ok_or_else(|| {
        CliError::usage("no results store: neither --db, FLASHLAB_DB nor HOME is set").hint("give --db PATH")
    })
}

fn error(e: StoreError) -> CliError {
    match e {
        StoreError::NoSuchRun(_) => {
            CliError::usage(e.to_string()).hint("`flashlab results list` shows the runs and their ids")
        }
        StoreError::Sqlite { .. } | StoreError::Layout { .. } => CliError::usage(e.to_string())
            .hint("is it a flashlab results store? --db PATH or FLASHLAB_DB chooses another"),
    }
}

fn open(db: Option<&Path>) -> CliResult<Store> {
    let p = path(db)?;
    if !p.exists() {
        return Err(CliError::usage(format!("no results store at {}", p.display()))
            .hint("every measuring run saves itself there (`flashlab probe`); --db PATH chooses another"));
    }
    Store::open(&p).map_err(error)
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Listing {
    pub store: String,
    pub runs: Vec<RunRow>,
}

pub fn list(db: Option<&Path>, device: Option<&str>) -> CliResult<RunDocument> {
    let s = open(db)?;
    let runs = s.list(device).map_err(error)?;
    let mut doc = RunDocument::new("results list", None);
    doc.merge(&Listing {
        store: s.path().display().to_string(),
        runs,
    });
    doc.finish(None);
    Ok(doc)
}

/// A stored run, as its own command printed it.
pub fn show(db: Option<&Path>, id: i64) -> CliResult<RunDocument> {
    open(db)?.get(id).map_err(error)
}

/// The stored document, as `results import` takes it back.
pub fn export(db: Option<&Path>, id: i64) -> CliResult<String> {
    let doc = show(db, id)?;
    Ok(format!("{}\n", serde_json::to_string_pretty(&doc).unwrap_or_default()))
}

/// The commands whose runs are stored, compared and drawn.
pub const MEASURING: &[&str] = &[
    "info", "align", "au", "page", "open-au", "fat", "scatter", "bench", "capacity", "probe",
];

/// A run document from a file: what `import` and `report FILE` read.
pub fn read_document(file: &Path) -> CliResult<RunDocument> {
    let shown = file.display();
    let text = crate::files::read_small(file, store::MAX_IMPORT).map_err(|why| {
        CliError::usage(format!("cannot read {shown}: {why}"))
            .hint("give a file written by `flashlab ... --json` or `flashlab results export`")
    })?;
    let doc: RunDocument = serde_json::from_str(&text).map_err(|e| {
        CliError::usage(format!("{shown} is not a flashlab run document: {e}"))
            .hint("give a file written by `flashlab ... --json` or `flashlab results export`")
    })?;
    if doc.schema_version == 0
        || doc.schema_version > crate::document::SCHEMA_VERSION
        || !MEASURING.contains(&doc.command.as_str())
    {
        return Err(CliError::usage(format!(
            "{shown}: schema version {} of command '{}' is not one this flashlab reads",
            doc.schema_version, doc.command
        ))
        .hint("export it again with this flashlab, or use a newer one"));
    }
    Ok(doc)
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ImportResult {
    pub id: i64,
    pub duplicate: bool,
}

pub fn import(db: Option<&Path>, file: &Path) -> CliResult<RunDocument> {
    let run = read_document(file)?;
    let p = path(db)?;
    let mut s = Store::open(&p).map_err(error)?;
    let (id, duplicate) = match s.import(&run).map_err(error)? {
        Imported::New(id) => (id, false),
        Imported::Duplicate(id) => (id, true),
    };
    let mut doc = RunDocument::new("results import", None);
    doc.merge(&ImportResult { id, duplicate });
    doc.finish(None);
    Ok(doc)
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Comparison {
    /// The runs compared, in the order given.
    pub runs: Vec<Compared>,
    pub rows: Vec<metrics::Row>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Compared {
    pub id: String,
    pub command: String,
    pub device: String,
    pub started_unix: u64,
}

/// A run named on the command line: a stored run's id, or a file.
pub fn load(db: Option<&Path>, what: &str) -> CliResult<(String, RunDocument)> {
    match what.parse::<i64>() {
        Ok(id) => Ok((format!("#{id}"), show(db, id)?)),
        Err(_) => Ok((what.to_string(), read_document(Path::new(what))?)),
    }
}

pub fn compare(db: Option<&Path>, which: &[String]) -> CliResult<RunDocument> {
    let runs: Vec<(String, RunDocument)> = which.iter().map(|w| load(db, w)).collect::<CliResult<_>>()?;
    let docs: Vec<RunDocument> = runs.iter().map(|(_, d)| d.clone()).collect();
    let mut doc = RunDocument::new("results compare", None);
    doc.merge(&Comparison {
        runs: runs
            .iter()
            .map(|(id, d)| Compared {
                id: id.clone(),
                command: d.command.clone(),
                device: store::device_key::of(d).name,
                started_unix: d.started_unix,
            })
            .collect(),
        rows: metrics::compare(&docs),
    });
    doc.finish(None);
    Ok(doc)
}
