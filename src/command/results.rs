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

/// The store a reading command opens: one that exists and holds a
/// database. An empty file is none yet (SQLite would make it one, writing
/// to a file the user only asked to read).
fn open(db: Option<&Path>) -> CliResult<Store> {
    let p = path(db)?;
    let empty = std::fs::metadata(&p).is_ok_and(|m| m.is_file() && m.len() == 0);
    if empty || !p.exists() {
        let why = if empty { ": the file is empty" } else { "" };
        return Err(CliError::usage(format!("no results store at {}{why}", p.display()))
            .hint("every measuring run saves itself there (`flashlab probe`); --db PATH chooses another"));
    }
    Store::open(&p).map_err(error)
}

/// Which store `results` and `report` read: a local SQLite file, or the
/// fleet's PostgreSQL database (`--db postgres://...`).
#[derive(Debug, Clone, Copy)]
pub enum Stored<'a> {
    Local(Option<&'a Path>),
    Fleet(&'a str),
}

/// What `results list` keeps: `--device`, `--batch`, `--host`, `--label`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    pub device: Option<&'a str>,
    pub batch: Option<&'a str>,
    pub host: Option<&'a str>,
    pub label: Option<&'a str>,
}

/// `named`: whether the user named the store (`--db`, `FLASHLAB_DB`), so
/// the commands the listing suggests name it too.
pub fn list(from: Stored<'_>, filter: Filter<'_>, named: bool) -> CliResult<RunDocument> {
    let mut doc = RunDocument::new(crate::document::CommandName::ResultsList, None);
    let mut listing = listing(from, filter)?;
    if named {
        listing.db_option = crate::places::db_option(&listing.store);
    }
    doc.body = Body::Listing(listing);
    doc.finish(None);
    Ok(doc)
}

/// A store's name, and its runs with their documents where they read.
type Rows = (String, Vec<(store::RunRow, Option<RunDocument>)>);

/// The stored runs, newest first, with their documents where they read.
fn rows(from: Stored<'_>, filter: Filter<'_>) -> CliResult<Rows> {
    match from {
        Stored::Local(db) => {
            let s = open(db)?;
            let runs = s.list(filter.device).map_err(error)?;
            let rows = runs
                .into_iter()
                .map(|r| {
                    let d = s.get(r.id).ok();
                    (r, d)
                })
                .filter(|(r, _)| filter.host.is_none_or(|h| r.host.contains(h)))
                .collect();
            Ok((s.path().display().to_string(), rows))
        }
        Stored::Fleet(url) => {
            let mut f = store::fleet::Fleet::connect(url).map_err(error)?;
            let lower = filter.device.map(str::to_lowercase);
            let rows = f
                .list(filter.host, filter.batch)
                .map_err(error)?
                .into_iter()
                .filter(|(r, _)| {
                    lower.as_deref().is_none_or(|d| {
                        [&r.device_key, &r.device, &r.target]
                            .iter()
                            .any(|x| x.to_lowercase().contains(d))
                    })
                })
                .map(|(r, text)| (r, RunDocument::from_json(&text).ok()))
                .collect();
            Ok((store::fleet::shown(url), rows))
        }
    }
}

/// The stored runs, newest first, that the filter keeps, each with its
/// findings and, for a batch's device, its slot and label.
fn listing(from: Stored<'_>, filter: Filter<'_>) -> CliResult<Listing> {
    let (store_name, rows) = rows(from, filter)?;
    let mut runs = Vec::with_capacity(rows.len());
    for (mut r, d) in rows {
        // A run whose document does not read back is listed without one;
        // `results show` names the fault.
        if let Some(d) = &d {
            r.verdict = verdict(d);
            r.label = d.label().map(str::to_string);
            // A batch's device by its slot, beside its target.
            if let Some(t) = d.extras.batch.get() {
                r.target = format!("{} ({})", r.target, t.slot);
            }
        }
        let tag = d.as_ref().and_then(|d| d.extras.batch.get().map(|t| t.id.clone()));
        let labelled = filter.label.is_none_or(|want| {
            r.label
                .as_deref()
                .is_some_and(|l| l.to_lowercase().contains(&want.to_lowercase()))
        });
        if (filter.batch.is_none() || tag.as_deref() == filter.batch) && labelled {
            runs.push(r);
        }
    }
    Ok(Listing {
        store: store_name,
        runs,
        db_option: String::new(),
        device_filter: filter.device.map(str::to_string),
        batch_filter: filter.batch.map(str::to_string),
        label_filter: filter.label.map(str::to_string),
    })
}

/// The stored runs of batch `id`, in the order they were made.
pub fn batch_runs(from: Stored<'_>, id: &str) -> CliResult<Vec<i64>> {
    let filter = Filter {
        batch: Some(id),
        ..Filter::default()
    };
    let mut ids: Vec<i64> = listing(from, filter)?.runs.iter().map(|r| r.id).collect();
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
pub fn show(from: Stored<'_>, id: i64) -> CliResult<RunDocument> {
    match from {
        Stored::Local(db) => open(db)?.get(id).map_err(error),
        Stored::Fleet(url) => store::fleet::Fleet::connect(url)
            .and_then(|mut f| f.get(id))
            .map_err(error),
    }
}

/// The stored document, as `results import` takes it back.
pub fn export(from: Stored<'_>, id: i64) -> CliResult<String> {
    let doc = show(from, id)?;
    Ok(format!("{}\n", serde_json::to_string_pretty(&doc).unwrap_or_default()))
}

/// `results upload`: the local store's runs sent to the fleet at `url`.
pub fn upload(db: Option<&Path>, url: &str) -> CliResult<RunDocument> {
    let mut local = open(db)?;
    let done = store::fleet::upload(&mut local, url).map_err(|e| {
        CliError::usage(e.to_string())
            .hint("the runs stay in the local store; run `flashlab results upload` again later")
    })?;
    let mut doc = RunDocument::new(crate::document::CommandName::ResultsUpload, None);
    doc.body = Body::Uploaded(crate::document::bodies::UploadBody {
        upload: crate::document::bodies::Upload {
            fleet: store::fleet::shown(url),
            sent: done.sent,
            already: done.kept,
        },
    });
    doc.finish(None);
    Ok(doc)
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
    // Figures no run writes: they would be stored, then shown as a line
    // of 300 digits or a date in the year 584554051223.
    let device_s = doc.device_time_s.unwrap_or(0.0);
    if !(0.0..=MAX_DEVICE_S).contains(&device_s) || doc.started_unix > doc.ended_unix || doc.ended_unix > LAST_UNIX {
        return Err(CliError::usage(format!(
            "{shown}: device_time_s {device_s}, started_unix {} and ended_unix {} are not a run's",
            doc.started_unix, doc.ended_unix
        ))
        .hint("give a file written by `flashlab ... --json` or `flashlab results export`, unedited"));
    }
    Ok(doc)
}

/// The most device time a run can record: the range of the u64
/// nanosecond clock every target keeps.
const MAX_DEVICE_S: f64 = u64::MAX as f64 / 1e9;

/// The last second of the year 9999 (1970 + 8030 years, 253,402,300,799
/// s): a run's dates fit a four-digit year.
const LAST_UNIX: u64 = 253_402_300_799;

/// `named` as for [`list`].
pub fn import(db: Option<&Path>, file: &Path, named: bool) -> CliResult<RunDocument> {
    let run = read_document(file)?;
    let p = path(db)?;
    let mut s = Store::open(&p).map_err(error)?;
    let (id, duplicate) = match s.import(&run).map_err(error)? {
        Imported::New(id) => (id, false),
        Imported::Duplicate(id) => (id, true),
    };
    let mut doc = RunDocument::new(crate::document::CommandName::ResultsImport, None);
    let shown = p.to_string_lossy();
    let named_store = named.then(|| (shown.to_string(), crate::places::db_option(&shown)));
    doc.body = Body::Imported(ImportResult {
        id,
        duplicate,
        named_store,
    });
    doc.finish(None);
    Ok(doc)
}

/// A run named on the command line: a stored run's id, or a file.
pub fn load(from: Stored<'_>, what: &str) -> CliResult<(String, RunDocument)> {
    match what.parse::<i64>() {
        Ok(id) => Ok((format!("#{id}"), show(from, id)?)),
        Err(_) => Ok((what.to_string(), read_document(Path::new(what))?)),
    }
}

pub fn compare(from: Stored<'_>, which: &[String]) -> CliResult<RunDocument> {
    let runs: Vec<(String, RunDocument)> = which.iter().map(|w| load(from, w)).collect::<CliResult<_>>()?;
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
                label: d.label().map(str::to_string),
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
