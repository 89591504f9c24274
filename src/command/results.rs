//! `flashlab results list|show|compare|export|import`: the stored runs.
//! Each gives a run document (or, for export, the stored one's text), so
//! the text and JSON renderers show them as they show everything else.

use std::path::{Path, PathBuf};

use crate::document::RunDocument;
use crate::document::bodies::{Body, Compared, Comparison, ImportResult, Listing};
use crate::error::{CliError, CliResult};
use crate::measure::metrics;
use crate::store::{self, Imported, Store, StoreError};

/// The store a `results` command reads: `--db`, else the environment's
/// (the CLI resolved which: `Places::store_or`).
pub fn path(db: Option<&Path>) -> CliResult<PathBuf> {
    db.map(Path::to_path_buf).ok_or_else(|| {
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

pub fn list(db: Option<&Path>, device: Option<&str>, batch: Option<&str>) -> CliResult<RunDocument> {
    let mut doc = RunDocument::new(crate::document::CommandName::ResultsList, None);
    doc.body = Body::Listing(listing(db, device, batch)?);
    doc.finish(None);
    Ok(doc)
}

/// The stored runs, newest first, that `device` and `batch` keep.
fn listing(db: Option<&Path>, device: Option<&str>, batch: Option<&str>) -> CliResult<Listing> {
    let s = open(db)?;
    let mut runs = s.list(device).map_err(error)?;
    let mut keep = Vec::with_capacity(runs.len());
    for r in &mut runs {
        // A run whose document does not read back is listed without one;
        // `results show` names the fault.
        let d = s.get(r.id).ok();
        if let Some(d) = &d {
            r.verdict = verdict(d);
            // A batch's device by its slot and label, beside its target.
            if let Some(t) = d.extras.batch.get() {
                r.target = match &t.label {
                    Some(l) => format!("{} ({}, {l})", r.target, t.slot),
                    None => format!("{} ({})", r.target, t.slot),
                };
            }
        }
        let tag = d.as_ref().and_then(|d| d.extras.batch.get().map(|t| t.id.clone()));
        keep.push(batch.is_none() || tag.as_deref() == batch);
    }
    let mut keep = keep.into_iter();
    runs.retain(|_| keep.next().unwrap_or(false));
    Ok(Listing {
        store: s.path().display().to_string(),
        runs,
        device_filter: device.map(str::to_string),
        batch_filter: batch.map(str::to_string),
    })
}

/// The stored runs of batch `id`, in the order they were made.
pub fn batch_runs(db: Option<&Path>, id: &str) -> CliResult<Vec<i64>> {
    let mut ids: Vec<i64> = listing(db, None, Some(id))?.runs.iter().map(|r| r.id).collect();
    if ids.is_empty() {
        return Err(CliError::usage(format!("no stored run belongs to batch {id}"))
            .hint("`flashlab batch` prints its id; `flashlab results list` shows each run's batch"));
    }
    ids.sort_unstable();
    Ok(ids)
}

/// A run's findings in a few words: the first two of its summary's
/// verdicts, each up to its first parenthesis, and "read-only" where a
/// writing step was skipped for want of --write (a read-only and a --write
/// probe of one device had looked the same in the list).
fn verdict(d: &RunDocument) -> String {
    use crate::measure::topic::Topic;
    const FIRST: [Topic; 7] = [
        Topic::EraseBlock,
        Topic::Capacity,
        Topic::OpenAus,
        Topic::FatArea,
        Topic::Speeds,
        Topic::Classes,
        Topic::Geometry,
    ];
    let summary = d.results.summary();
    let mut parts: Vec<String> = FIRST
        .iter()
        .filter_map(|topic| summary.iter().find(|(t, _)| t == topic))
        .take(2)
        .map(|(l, v)| {
            let short = first_clause(v)
                .trim_end_matches(" as far as sampled")
                .trim_end_matches([',', ';']);
            match *l {
                Topic::EraseBlock => format!("AU {short}"),
                // The sequential pair; the 4K figures are in `results show`.
                Topic::Speeds => format!("{} {}", l.label(), short.split("; ").next().unwrap_or(short)),
                l @ (Topic::Device
                | Topic::Geometry
                | Topic::OpenAus
                | Topic::FatArea
                | Topic::Capacity
                | Topic::Classes) => format!("{} {short}", l.label()),
            }
        })
        .collect();
    if d.extras.read_only.get() == Some(&true) {
        parts.push("read-only".into());
    }
    if let Some(l) = d.extras.life.get() {
        if let Some(w) = l.baseline.waf {
            parts.push(format!("amplification {w:.1}"));
        }
        if let Some(y) = &l.baseline.years {
            parts.push(format!("life P50 {}", crate::units::years(y.p50)));
        }
    }
    parts.join("; ")
}

/// A summary value up to its first parenthesis, keeping the reason of a
/// "not claimed (why)": the list says why a run claimed nothing rather
/// than show it as a verdict.
fn first_clause(v: &str) -> &str {
    let mut from = 0;
    while let Some(i) = v[from..].find(" (") {
        let at = from + i;
        if !v[..at].ends_with("not claimed") {
            return &v[..at];
        }
        match v[at..].find(')') {
            Some(close) => from = at + close + 1,
            None => return v,
        }
    }
    v
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

/// A run document from a file: what `import` and `report FILE` read.
pub fn read_document(file: &Path) -> CliResult<RunDocument> {
    let shown = file.display();
    let text = crate::files::read_small(file, store::MAX_IMPORT).map_err(|why| {
        CliError::usage(format!("cannot read {shown}: {why}"))
            .hint("give a file written by `flashlab ... --json` or `flashlab results export`")
    })?;
    let doc = RunDocument::from_json(&text).map_err(|e| {
        CliError::usage(format!("{shown} is not a flashlab run document: {e}"))
            .hint("give a file written by `flashlab ... --json` or `flashlab results export`")
    })?;
    if doc.schema_version == 0 || doc.schema_version > crate::document::SCHEMA_VERSION || !doc.command.is_measuring() {
        return Err(CliError::usage(format!(
            "{shown}: schema version {} of command '{}' is not one this flashlab reads",
            doc.schema_version, doc.command
        ))
        .hint("export it again with this flashlab, or use a newer one"));
    }
    Ok(doc)
}

pub fn import(db: Option<&Path>, file: &Path) -> CliResult<RunDocument> {
    let run = read_document(file)?;
    let p = path(db)?;
    let mut s = Store::open(&p).map_err(error)?;
    let (id, duplicate) = match s.import(&run).map_err(error)? {
        Imported::New(id) => (id, false),
        Imported::Duplicate(id) => (id, true),
    };
    let mut doc = RunDocument::new(crate::document::CommandName::ResultsImport, None);
    doc.body = Body::Imported(ImportResult { id, duplicate });
    doc.finish(None);
    Ok(doc)
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
    let per: Vec<_> = runs.iter().map(|(_, d)| d.metrics()).collect();
    let mut doc = RunDocument::new(crate::document::CommandName::ResultsCompare, None);
    doc.body = Body::Comparison(Comparison {
        runs: runs
            .iter()
            .map(|(id, d)| Compared {
                id: id.clone(),
                command: d.command.clone(),
                target: d.target.as_ref().map_or(String::new(), |t| t.spec.clone()),
                device: crate::document::device::of(d).name,
                started_unix: d.started_unix,
            })
            .collect(),
        rows: metrics::compare(&per),
    });
    doc.finish(None);
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::first_clause;

    #[test]
    fn the_list_keeps_why_nothing_was_claimed() {
        assert_eq!(first_clause("2 AUs (8 MiB)"), "2 AUs");
        assert_eq!(
            first_clause("not claimed (the target is a loop device over the file /x.img)"),
            "not claimed (the target is a loop device over the file /x.img)"
        );
        assert_eq!(
            first_clause("6 in order, random not claimed (unsure: stopped after 9 device-seconds) (counted in AUs)"),
            "6 in order, random not claimed (unsure: stopped after 9 device-seconds)"
        );
        assert_eq!(first_clause("6 in order, 24 random"), "6 in order, 24 random");
    }
}
