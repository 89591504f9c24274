//! `flashlab restore [JOURNAL|TARGET]`: list pending journals, or put a journal's
//! bytes back and verify them (after a crash or power cut during a writing test).
//! Both give a run document: `pending` or `restored`.

use std::path::{Path, PathBuf};

use crate::args;
use crate::console::shell_word;
use crate::document::RunDocument;
use crate::document::bodies::{Body, Pending, PendingList, Restored, RestoredList, SetAsideBody, SetAsideDone};
use crate::error::{CliError, CliResult};
use crate::runner::open::{self, Opened};
use crate::runner::writable;
use crate::safety::identity::Identity;
use crate::safety::journal::{EXTENSION, Journal};
use crate::safety::pending::{self, Found};
use crate::safety::registry::{self, Registry};
use crate::safety::{self, SafetyError};
use crate::targets::Target;
use crate::targets::real::{EngineChoice, OpenOptions};
use crate::units::Iec;

/// Where restore looks for journals besides the registry's entries:
/// `--journal-dir` (else the default) and the default directory.
struct Dirs<'a> {
    given: &'a Path,
    default: &'a Path,
}

impl Dirs<'_> {
    fn all(&self) -> [&Path; 2] {
        [self.given, self.default]
    }

    /// Both, and the directory of a journal named by its path.
    fn around<'p>(&'p self, journal: &'p Path) -> [&'p Path; 3] {
        let own = journal
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        [self.given, self.default, own]
    }
}

/// `restore [JOURNAL|TARGET]`, journals in `dir` (`--journal-dir`) or
/// `default` (the environment's: `Places::journals`).
pub fn run(
    what: Option<&str>,
    force: bool,
    set_aside: bool,
    dir: Option<&Path>,
    default: &Path,
    engine: EngineChoice,
) -> CliResult<RunDocument> {
    let dirs = Dirs {
        given: dir.unwrap_or(default),
        default,
    };
    let Some(what) = what else {
        return list(&dirs);
    };
    if set_aside {
        return put_aside(Path::new(what), &dirs);
    }
    // (journal, the target to restore onto: its own path unless TARGET was given)
    let jobs: Vec<(PathBuf, Option<PathBuf>)> =
        if what.ends_with(EXTENSION) || Path::new(what).is_file() && looks_like_journal(what) {
            if std::fs::symlink_metadata(what).is_err() {
                return Err(CliError::usage(format!("no journal {what}"))
                    .hint("`flashlab restore` lists pending journals; --journal-dir DIR looks elsewhere"));
            }
            refuse_if_newer_pending(Path::new(what), &dirs)?;
            vec![(PathBuf::from(what), None)]
        } else {
            let target = Path::new(what);
            let live = Identity::of(target, 0);
            let all = pending::list_all(&dirs.all());
            let canon = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
            let mut found: Vec<&Found> = all.iter().filter(|f| f.covers(target, &live)).collect();
            // A journal made under this path whose bytes are not here any
            // more (the loop device now shows another file): taken up, so
            // the identity check says what differs and how to override it.
            if found.is_empty() {
                found = all
                    .iter()
                    .filter(|f| f.best_header().is_some_and(|h| h.target == canon.display().to_string()))
                    .collect();
            }
            if found.is_empty() {
                return Err(CliError::usage(format!("no pending journal for {what}")).hint(format!(
                    "`flashlab restore` lists pending journals (in {} and wherever the register {} points)",
                    dirs.given.display(),
                    registry::SYSTEM
                )));
            }
            // Newest first: when two runs journalled the same bytes, the
            // older journal holds the true original and must land last.
            found.sort_by_key(|f| std::cmp::Reverse(f.best_header().map(|h| h.order())));
            let (away, here): (Vec<&Found>, Vec<&Found>) = found.into_iter().partition(|f| f.out_of_reach);
            // One that cannot be read stops the restore before anything is
            // written: it may be the newest over these bytes, which must go
            // back first. So does one out of reach that is newer than one
            // to restore now; an older one waits for its drive.
            let oldest = here.last().and_then(|f| f.best_header()).map(|h| h.order());
            let blocking = here.iter().find(|f| f.header.is_err()).or_else(|| {
                away.iter()
                    .find(|f| here.is_empty() || f.best_header().map(|h| h.order()) > oldest)
            });
            if let Some(f) = blocking {
                return Err(writable::unreadable(f, &why(f), "nothing was restored", dirs.default));
            }
            for f in &away {
                crate::errln!(
                    "note: {} also holds bytes of {what} from an earlier run; it is out of reach and goes back \
                     after these, once its directory is there again",
                    f.path.display()
                );
            }
            here.into_iter()
                .map(|f| (f.path.clone(), Some(target.to_path_buf())))
                .collect()
        };
    let mut done = Vec::new();
    for (p, onto) in jobs {
        let r = restore_one(&p, onto.as_deref(), force, engine, default)?;
        crate::errln!(
            "restored {} to {} and verified it against the journal's checksums; journal deleted",
            Iec(r.bytes_restored),
            r.target
        );
        done.push(r);
    }
    let mut doc = RunDocument::new(crate::document::CommandName::Restore, None);
    doc.body = Body::Restored(RestoredList { restored: done });
    doc.finish(None);
    Ok(doc)
}

/// Why a found journal's header cannot be read.
fn why(f: &Found) -> String {
    f.header.as_ref().err().map(ToString::to_string).unwrap_or_default()
}

fn looks_like_journal(path: &str) -> bool {
    Journal::header_of(Path::new(path)).is_ok()
}

/// Refuse to restore `path` while a newer journal, in any directory,
/// covers some of the same bytes (or cannot be read, so might): that one
/// must go back first, or this journal's originals would be overwritten by
/// the newer run's "originals", which are this run's pattern.
fn refuse_if_newer_pending(path: &Path, dirs: &Dirs) -> CliResult<()> {
    let Ok(mine) = Journal::header_of(path) else {
        return Ok(());
    };
    let here = registry::located(path);
    let all = pending::list_all(&dirs.around(path));
    let newer = all.iter().find(|f| {
        registry::located(&f.path) != here
            && f.best_header().is_none_or(|h| {
                h.order() > mine.order()
                    && (if mine.identity.layers.is_empty() || h.identity.layers.is_empty() {
                        h.target == mine.target
                    } else {
                        h.identity.covers_bytes_of(&h.ranges, &mine.identity.layers)
                    })
            })
    });
    match newer {
        Some(f) if f.header.is_err() => Err(writable::unreadable(
            f,
            &why(f),
            "it may be newer than this one; nothing was restored",
            dirs.default,
        )),
        Some(f) => Err(CliError::usage(format!(
            "{} is newer and covers some of the same bytes: it must be restored first",
            f.path.display()
        ))
        .hint(format!(
            "run `flashlab restore {}` first, or restore by target (`flashlab restore {}`), which takes them \
             newest first",
            shell_word(&f.path.to_string_lossy()),
            shell_word(&mine.target)
        ))),
        None => Ok(()),
    }
}

/// `restore --set-aside JOURNAL`: the user's word that a pending journal
/// (damaged, or out of reach for good) will not be restored.
fn put_aside(path: &Path, dirs: &Dirs) -> CliResult<RunDocument> {
    // Where it is too: a run with --journal-dir whose register entry is
    // gone left it only there, and a refusal's set-aside command names it
    // by its path alone.
    let all = pending::list_all(&dirs.around(path));
    let here = registry::located(path);
    let Some(f) = all.iter().find(|f| registry::located(&f.path) == here) else {
        return Err(CliError::usage(format!("{} is not a pending journal", path.display()))
            .hint("`flashlab restore` lists pending journals and registry entries, each by its path"));
    };
    let holds = f.best_header().map(|h| (h.target.clone(), h.total_bytes));
    let done = pending::set_aside(&f.path, &Registry::system())?;
    match &holds {
        _ if !done.kept => crate::errln!(
            "dropped the registry entry of {} (out of reach): no run counts it as pending now; whatever it held \
             was NOT put back, and `flashlab restore` lists it again should its directory come back",
            f.path.display()
        ),
        Some((target, bytes)) => crate::errln!(
            "set aside {} as {}: no run counts it as pending now; up to {} of {target} it held were NOT put back",
            f.path.display(),
            done.now.display(),
            Iec(*bytes)
        ),
        None => crate::errln!(
            "set aside {} as {}: no run counts it as pending now; whatever it held was NOT put back",
            f.path.display(),
            done.now.display()
        ),
    }
    let mut doc = RunDocument::new(crate::document::CommandName::Restore, None);
    doc.body = Body::SetAside(SetAsideBody {
        set_aside: SetAsideDone {
            journal: f.path.display().to_string(),
            now: done.now.display().to_string(),
            target: holds.map(|(t, _)| t),
        },
    });
    doc.finish(None);
    Ok(doc)
}

/// Whether this user may write a journal's bytes onto `target`: a journal
/// is restored by the user who made it, or its bytes came from root. Root
/// restores another user's journal only over that user's own file. Any
/// user can leave an entry in the registry pointing at a journal of their
/// making, so without this a journal written by hand could have root write
/// its bytes over a file the user cannot write.
fn trusted(j: &Journal, target: &Path) -> CliResult<()> {
    use std::os::unix::fs::MetadataExt;
    let owner = j.owner()?;
    let me = rustix::process::geteuid().as_raw();
    if owner == me || owner == 0 {
        return Ok(());
    }
    let file = Identity::of(target, 0)
        .backing_file
        .map_or_else(|| target.to_path_buf(), PathBuf::from);
    let theirs = std::fs::metadata(&file).is_ok_and(|m| m.uid() == owner);
    if me == 0 && theirs {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "journal {} belongs to uid {owner}, and {} is not theirs: its bytes are not written here; nothing was \
         restored",
        j.path.display(),
        file.display()
    ))
    .hint(format!(
        "restore it as the user who made it (uid {owner}), who wrote these bytes; if it is not one of flashlab's, \
         set it aside: `flashlab restore --set-aside {}`",
        shell_word(&j.path.to_string_lossy())
    )))
}

fn restore_one(
    path: &Path,
    onto: Option<&Path>,
    force: bool,
    engine: EngineChoice,
    default_dir: &Path,
) -> CliResult<Restored> {
    // A running flashlab holds its journal's lock (and restores by itself):
    // taken before the journal is even read, since it may be mid-append.
    let _lock = pending::lock(path)?;
    let j = Journal::open(path)?;
    let target_path = onto.map_or_else(|| PathBuf::from(&j.header.target), Path::to_path_buf);
    let shown = target_path.display().to_string();
    trusted(&j, &target_path)?;
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
            "restore onto the file: `flashlab restore {}{}` (--force would write {shown} instead)",
            shell_word(file),
            writable::journal_dir_of(path, default_dir)
        )));
    }
    // The same claim a writing run takes: nothing else writes these bytes
    // (through any alias) while they are put back.
    let claim = safety::claim::claim(&target_path)?;
    // Whatever another name of the bytes still holds unwritten (a crashed
    // run's pages in a lower loop device's cache) lands now, not over the
    // restored bytes later.
    writable::settle(&claim, &shown);
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
    writable::settle(&claim, &shown);
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

/// Every pending journal a run can find, each with what it holds or what
/// is wrong with it. One that cannot be read makes the listing exit 1 (its
/// bytes cannot be put back as things are), the listing still printed.
fn list(dirs: &Dirs) -> CliResult<RunDocument> {
    let pending: Vec<Pending> = pending::list_all(&dirs.all())
        .into_iter()
        .map(|f| {
            // What the journal holds: ranges are journalled as the test
            // reaches them, so a crash leaves fewer than were declared.
            let opened = f
                .header
                .as_ref()
                .map_err(ToString::to_string)
                .and_then(|_| Journal::open(&f.path).map(|j| j.bytes()).map_err(|e| e.to_string()));
            let damaged = f.damaged() || f.header.is_ok() && opened.is_err();
            let h = f.best_header();
            Pending {
                live: f.is_live(),
                journal: f.path.display().to_string(),
                target: h.map(|h| h.target.clone()),
                size_bytes: h.map(|h| h.size_bytes),
                bytes: opened.as_ref().ok().copied(),
                created_unix: h.map(|h| h.created_unix),
                error: opened.err(),
                damaged,
                uid: f.uid,
            }
        })
        .collect();
    let bad = pending.iter().filter(|p| p.damaged).count();
    let aside = Pending::set_aside_command(pending.iter().filter(|p| p.damaged));
    let mut doc = RunDocument::new(crate::document::CommandName::Restore, None);
    doc.body = Body::Pending(PendingList {
        journal_dir: dirs.given.display().to_string(),
        registry: registry::SYSTEM.into(),
        pending,
    });
    doc.finish(None);
    if bad > 0 {
        return Err(CliError::failed(format!(
            "{} damaged: {} cannot put back the bytes {}",
            crate::units::count(bad as u64, "pending journal is", "pending journals are"),
            if bad == 1 { "it" } else { "they" },
            if bad == 1 { "it holds" } else { "they hold" },
        ))
        .hint(format!(
            "while one is pending, writing runs on the bytes it may cover are refused; once you have looked at it, \
             set it aside with {} (it is kept, renamed; its bytes stay as they are)",
            aside
        ))
        .with_document(doc));
    }
    Ok(doc)
}
