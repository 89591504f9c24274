//! `flashlab restore [JOURNAL|TARGET]`: list pending journals, or put a journal's
//! bytes back and verify them (after a crash or power cut during a writing test).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::resolve::{self, Opened};
use super::write::{identity, safety_error};
use crate::error::{CliError, CliResult};
use crate::output::{json, table};
use crate::safety::journal::{self, EXTENSION, Journal};
use crate::safety::{self, SafetyError};
use crate::target::Target;
use crate::target::real::{EngineChoice, OpenOptions};
use crate::units::Iec;

#[derive(Serialize)]
struct Pending {
    journal: String,
    target: Option<String>,
    size_bytes: Option<u64>,
    bytes: Option<u64>,
    created_unix: Option<u64>,
    error: Option<String>,
}

#[derive(Serialize)]
struct Restored {
    journal: String,
    target: String,
    bytes_restored: u64,
    torn_tail_skipped: bool,
}

pub fn run(
    what: Option<&str>,
    force: bool,
    dir: Option<PathBuf>,
    engine: EngineChoice,
    as_json: bool,
) -> CliResult<()> {
    let dir = dir.unwrap_or_else(safety::default_journal_dir);
    let Some(what) = what else {
        return list(&dir, as_json);
    };
    let paths: Vec<PathBuf> = if what.ends_with(EXTENSION) || Path::new(what).is_file() && looks_like_journal(what) {
        vec![PathBuf::from(what)]
    } else {
        let (canon, _) = identity(Path::new(what));
        let found: Vec<PathBuf> = journal::list(&dir)
            .into_iter()
            .filter(|(_, h)| h.as_ref().is_ok_and(|h| h.target == canon))
            .map(|(p, _)| p)
            .collect();
        if found.is_empty() {
            return Err(
                CliError::usage(format!("no pending journal for {what} in {}", dir.display()))
                    .hint("`flashlab restore` lists pending journals; --journal-dir DIR looks elsewhere"),
            );
        }
        found
    };
    let mut done = Vec::new();
    for p in paths {
        let r = restore_one(&p, force, engine)?;
        eprintln!(
            "restored {} bytes to {} and verified; journal deleted",
            r.bytes_restored, r.target
        );
        done.push(r);
    }
    if as_json {
        json::print(&json::Envelope {
            schema_version: json::SCHEMA_VERSION,
            command: "restore",
            target: None,
            device_time_s: None,
            body: serde_json::json!({ "restored": done }),
        });
    }
    Ok(())
}

fn looks_like_journal(path: &str) -> bool {
    Journal::header_of(Path::new(path)).is_ok()
}

fn restore_one(path: &Path, force: bool, engine: EngineChoice) -> CliResult<Restored> {
    let j = Journal::open(path).map_err(safety_error)?;
    let target_path = j.header.target.clone();
    let opened = resolve::open(
        &target_path,
        OpenOptions {
            write: true,
            exclusive: true,
            engine,
        },
    )?;
    let Opened::Real(mut t) = opened else {
        // flashlab never journals a simulation; only a hand-made file says so.
        return Err(CliError::usage(format!(
            "journal {} names {target_path}, which is not a block device or file",
            path.display()
        ))
        .hint("this is not a journal flashlab wrote; nothing was restored"));
    };
    let size = t.description().size_bytes;
    let (_, serial) = identity(Path::new(&target_path));
    let mismatch = if size != j.header.size_bytes {
        Some((format!("{} bytes", j.header.size_bytes), format!("{size} bytes")))
    } else if j.header.identity.is_some() && serial != j.header.identity {
        Some((
            format!("serial {}", j.header.identity.clone().unwrap_or_default()),
            format!("serial {}", serial.unwrap_or_else(|| "none".into())),
        ))
    } else {
        None
    };
    if let Some((expected, found)) = mismatch
        && !force
    {
        return Err(safety_error(SafetyError::IdentityMismatch {
            path: path.display().to_string(),
            expected: format!("{target_path} ({expected})"),
            found,
        }));
    }
    // Even --force never writes past the end: a smaller device is another device.
    if let Some(end) = j.end()
        && end > size
    {
        return Err(CliError::usage(format!(
            "journal {} restores bytes up to {end}, but {target_path} has only {size}",
            path.display()
        ))
        .hint("this journal is for a larger device; nothing was restored"));
    }
    let torn = j.torn_tail;
    let bytes = j.restore(t.as_mut() as &mut dyn Target).map_err(safety_error)?.bytes;
    j.delete().map_err(safety_error)?;
    Ok(Restored {
        journal: path.display().to_string(),
        target: target_path,
        bytes_restored: bytes,
        torn_tail_skipped: torn,
    })
}

fn list(dir: &Path, as_json: bool) -> CliResult<()> {
    let pending: Vec<Pending> = journal::list(dir)
        .into_iter()
        .map(|(p, h)| match h {
            Ok(h) => Pending {
                journal: p.display().to_string(),
                target: Some(h.target),
                size_bytes: Some(h.size_bytes),
                // What the journal holds: ranges are journalled as the test
                // reaches them, so a crash leaves fewer than were declared.
                bytes: Some(Journal::open(&p).map_or(h.total_bytes, |j| j.bytes())),
                created_unix: Some(h.created_unix),
                error: None,
            },
            Err(e) => Pending {
                journal: p.display().to_string(),
                target: None,
                size_bytes: None,
                bytes: None,
                created_unix: None,
                error: Some(e.to_string()),
            },
        })
        .collect();
    if as_json {
        json::print(&json::Envelope {
            schema_version: json::SCHEMA_VERSION,
            command: "restore",
            target: None,
            device_time_s: None,
            body: serde_json::json!({ "journal_dir": dir.display().to_string(), "pending": pending }),
        });
        return Ok(());
    }
    if pending.is_empty() {
        println!("no pending journals in {}", dir.display());
        return Ok(());
    }
    let rows: Vec<Vec<String>> = pending
        .iter()
        .map(|p| {
            vec![
                p.target.clone().unwrap_or_else(|| "?".into()),
                p.size_bytes.map(|s| Iec(s).to_string()).unwrap_or_default(),
                p.created_unix.map(|c| c.to_string()).unwrap_or_default(),
                p.bytes.map(|b| b.to_string()).unwrap_or_default(),
                p.error.clone().unwrap_or_else(|| p.journal.clone()),
            ]
        })
        .collect();
    println!(
        "{}",
        table::grid(&["target", "size", "created (unix)", "bytes", "journal"], &rows)
    );
    println!("restore one with `flashlab restore JOURNAL` or `flashlab restore TARGET`");
    Ok(())
}
