//! `flashlab restore [JOURNAL|TARGET]`: list pending journals, or put a journal's
//! bytes back and verify them (after a crash or power cut during a writing test).
//! Both give a run document: `pending` or `restored`.

use std::path::{Path, PathBuf};

use crate::args;
use crate::document::RunDocument;
use crate::document::bodies::{Body, Pending, PendingList, Restored, RestoredList};
use crate::error::{CliError, CliResult};
use crate::runner::open::{self, Opened};
use crate::runner::session;
use crate::safety::identity::Identity;
use crate::safety::journal::{self, EXTENSION, Journal};
use crate::safety::{self, SafetyError};
use crate::target::Target;
use crate::target::real::{EngineChoice, OpenOptions};
use crate::units::Iec;

pub fn run(what: Option<&str>, force: bool, dir: Option<PathBuf>, engine: EngineChoice) -> CliResult<RunDocument> {
    let dir = dir.unwrap_or_else(safety::default_journal_dir);
    let Some(what) = what else {
        return Ok(list(&dir));
    };
    // (journal, the target to restore onto: its own path unless TARGET was given)
    let jobs: Vec<(PathBuf, Option<PathBuf>)> =
        if what.ends_with(EXTENSION) || Path::new(what).is_file() && looks_like_journal(what) {
            if std::fs::symlink_metadata(what).is_err() {
                return Err(CliError::usage(format!("no journal {what}"))
                    .hint("`flashlab restore` lists pending journals; --journal-dir DIR looks elsewhere"));
            }
            refuse_if_newer_pending(Path::new(what))?;
            vec![(PathBuf::from(what), None)]
        } else {
            let target = Path::new(what);
            let live = Identity::of(target, 0);
            let mut found: Vec<(PathBuf, journal::Header)> = journal::list_all(&[dir.as_path()])
                .into_iter()
                .filter_map(|(p, h)| h.ok().map(|h| (p, h)))
                .filter(|(_, h)| session::belongs_to(h, target, &live))
                .collect();
            // A journal made under this path whose bytes are not here any
            // more (the loop device now shows another file): taken up, so
            // the identity check says what differs and how to override it.
            if found.is_empty() {
                let canon = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
                found = journal::list_all(&[dir.as_path()])
                    .into_iter()
                    .filter_map(|(p, h)| h.ok().map(|h| (p, h)))
                    .filter(|(_, h)| h.target == canon.display().to_string())
                    .collect();
            }
            if found.is_empty() {
                return Err(
                    CliError::usage(format!("no pending journal for {what} in {}", dir.display()))
                        .hint("`flashlab restore` lists pending journals; --journal-dir DIR looks elsewhere"),
                );
            }
            // Newest first: when two runs journalled the same bytes, the
            // older journal holds the true original and must land last.
            found.sort_by_key(|(_, h)| std::cmp::Reverse(h.order()));
            found
                .into_iter()
                .map(|(p, _)| (p, Some(target.to_path_buf())))
                .collect()
        };
    let mut done = Vec::new();
    for (p, onto) in jobs {
        let r = restore_one(&p, onto.as_deref(), force, engine)?;
        crate::errln!(
            "restored {} to {} and verified it against the journal's checksums; journal deleted",
            Iec(r.bytes_restored),
            r.target
        );
        done.push(r);
    }
    let mut doc = RunDocument::new("restore", None);
    doc.body = Body::Restored(RestoredList { restored: done });
    doc.finish(None);
    Ok(doc)
}

fn looks_like_journal(path: &str) -> bool {
    Journal::header_of(Path::new(path)).is_ok()
}

/// Refuse to restore `path` while a newer journal in its directory covers
/// some of the same bytes: that one must go back first, or this journal's
/// originals would be overwritten by the newer run's "originals", which are
/// this run's pattern.
fn refuse_if_newer_pending(path: &Path) -> CliResult<()> {
    let Ok(mine) = Journal::header_of(path) else {
        return Ok(());
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let newer = journal::list_all(&[dir]).into_iter().find(|(p, h)| {
        std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()) != canon
            && h.as_ref().is_ok_and(|h| {
                h.order() > mine.order()
                    && (if mine.identity.layers.is_empty() || h.identity.layers.is_empty() {
                        h.target == mine.target
                    } else {
                        h.identity.covers_bytes_of(&h.ranges, &mine.identity.layers)
                    })
            })
    });
    match newer {
        Some((p, _)) => Err(CliError::usage(format!(
            "{} is newer and covers some of the same bytes: it must be restored first",
            p.display()
        ))
        .hint(format!(
            "run `flashlab restore {}` first, or restore by target (`flashlab restore {}`), which takes them \
             newest first",
            p.display(),
            mine.target
        ))),
        None => Ok(()),
    }
}

fn restore_one(path: &Path, onto: Option<&Path>, force: bool, engine: EngineChoice) -> CliResult<Restored> {
    // A running flashlab holds its journal's lock (and restores by itself):
    // taken before the journal is even read, since it may be mid-append.
    let _lock = journal::lock(path)?;
    let j = Journal::open(path)?;
    let target_path = onto.map_or_else(|| PathBuf::from(&j.header.target), Path::to_path_buf);
    let shown = target_path.display().to_string();
    // A loop device detached (or attached to another file) since the crash:
    // its backing file still holds the bytes, at the same offsets when the
    // loop started at byte 0.
    if onto.is_none()
        && !force
        && !j.header.identity.layers.is_empty()
        && !j.header.identity.same_offsets(&Identity::of(&target_path, 0).layers)
        && let Some(file) = &j.header.identity.backing_file
    {
        return Err(CliError::usage(format!(
            "journal {} was made on {shown}, which no longer shows its bytes; they rest on {file}",
            path.display()
        ))
        .hint(format!(
            "restore onto the file: `flashlab restore {file}{}` (--force would write {shown} instead)",
            path.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(|d| format!(" --journal-dir {}", d.display()))
                .unwrap_or_default()
        )));
    }
    // The same claim a writing run takes: nothing else writes these bytes
    // (through any alias) while they are put back.
    let claim = safety::claim::claim(&target_path)?;
    // Whatever another name of the bytes still holds unwritten (a crashed
    // run's pages in a lower loop device's cache) lands now, not over the
    // restored bytes later.
    session::settle(&claim, &shown);
    let opened = open::open(
        &args::target(&shown)
            .map_err(|e| CliError::usage(e).hint("the journal names a target flashlab cannot parse"))?,
        OpenOptions {
            write: true,
            exclusive: true,
            engine,
        },
    )?;
    let Opened::Real(mut t) = opened else {
        // flashlab never journals a simulation; only a hand-made file says so.
        return Err(CliError::usage(format!(
            "journal {} names {shown}, which is not a block device or file",
            path.display()
        ))
        .hint("this is not a journal flashlab wrote; nothing was restored"));
    };
    let size = t.description().size_bytes;
    let mut reader = t.independent_reader().ok_or_else(|| {
        CliError::failed(format!("{shown}: cannot open a second, read-only descriptor"))
            .hint("restore verifies through one; check permissions")
    })?;
    let mut live = Identity::of(&target_path, size);
    live.fingerprint = j.header.identity.reread(reader.as_mut());
    let differences = j.header.identity.differences(&live);
    if !differences.is_empty() && !force {
        return Err(SafetyError::IdentityMismatch {
            path: path.display().to_string(),
            expected: j.header.target.clone(),
            found: differences.join("; "),
        }
        .into());
    }
    // Even --force never writes past the end: a smaller device is another device.
    if let Some(end) = j.end()
        && end > size
    {
        return Err(CliError::usage(format!(
            "journal {} restores bytes up to {end}, but {shown} has only {size}",
            path.display()
        ))
        .hint("this journal is for a larger device; nothing was restored"));
    }
    let torn = j.torn_tail;
    let bytes = j.restore(t.as_mut() as &mut dyn Target, Some(reader.as_mut()))?.bytes;
    // Every name shows the restored bytes, and they are read back once
    // more after that, before the journal goes.
    session::settle(&claim, &shown);
    j.verify(reader.as_mut())?;
    j.delete()?;
    Ok(Restored {
        journal: path.display().to_string(),
        target: shown,
        bytes_restored: bytes,
        torn_tail_skipped: torn,
        forced_past: differences,
    })
}

fn list(dir: &Path) -> RunDocument {
    let pending: Vec<Pending> = journal::list_all(&[dir])
        .into_iter()
        .map(|(p, h)| match h {
            Ok(h) => Pending {
                live: journal::is_live(&p),
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
                live: false,
                journal: p.display().to_string(),
                target: None,
                size_bytes: None,
                bytes: None,
                created_unix: None,
                error: Some(e.to_string()),
            },
        })
        .collect();
    let mut doc = RunDocument::new("restore", None);
    doc.body = Body::Pending(PendingList {
        journal_dir: dir.display().to_string(),
        pending,
    });
    doc.finish(None);
    doc
}
