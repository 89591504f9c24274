//! Opening a target for writing: consent for real targets, every alias
//! claimed and the device opened exclusively once for the run, then for
//! each writing test the journal directory checked, the identity taken, and
//! the preserving target built. Refusals happen here, before anything is
//! written.

use std::path::{Path, PathBuf};

use crate::args;
use crate::error::{CliError, CliResult};
use crate::runner::open;
use crate::safety::claim::Claim;
use crate::safety::identity::Identity;
use crate::safety::journal::Header;
use crate::safety::pending::Found;
use crate::safety::ranges::{self, Range};
use crate::safety::registry::Registry;
use crate::safety::{self, PreservingTarget};
use crate::targets::real::{EngineChoice, OpenOptions};
use crate::targets::{Target, TargetDescription, TargetKind};
use crate::units::Iec;

/// What the user allowed a writing test to do.
#[derive(Debug, Clone, Default)]
pub struct Consent {
    /// `--write`: consent to writing a real device or file.
    pub write: bool,
    /// `--no-preserve`: keep no journal; the written ranges are destroyed.
    pub no_preserve: bool,
    /// `--journal-dir`.
    pub journal_dir: Option<PathBuf>,
    /// The journal directory without `--journal-dir` (the environment's:
    /// [`crate::places::Places::journals`]): a run looks there for pending
    /// journals whatever `--journal-dir` says, and hints leave it unnamed.
    pub default_journal_dir: PathBuf,
    /// `--budget`: device-seconds each writing step may take.
    pub budget_s: Option<f64>,
}

impl Consent {
    pub fn new(w: &args::WriteArgs, places: &crate::places::Places) -> Consent {
        Consent {
            write: w.write,
            no_preserve: w.no_preserve,
            journal_dir: w.journal_dir.clone(),
            default_journal_dir: places.journals.clone(),
            budget_s: w.budget,
        }
    }

    /// Where this run's journals go: `--journal-dir`, else the default.
    pub fn journal_dir(&self) -> PathBuf {
        self.journal_dir
            .clone()
            .unwrap_or_else(|| self.default_journal_dir.clone())
    }

    /// Where pending journals are looked for besides the registry's
    /// entries: `--journal-dir` and the default directory.
    pub fn journal_dirs(&self) -> Vec<&Path> {
        self.journal_dir
            .as_deref()
            .into_iter()
            .chain([self.default_journal_dir.as_path()])
            .collect()
    }
}

/// The declared ranges for the consent line: every one when there are few, the
/// first and last few around a count when a sweep declares a hundred AUs.
fn listing(ranges: &[Range]) -> String {
    const HEAD: usize = 4;
    const TAIL: usize = 2;
    // Ranges that touch (bench's area in pieces) as one line each run.
    let mut runs: Vec<(Range, usize)> = Vec::new();
    for r in ranges {
        match runs.last_mut() {
            Some((last, n)) if last.end() == r.offset => {
                last.len += r.len;
                *n += 1;
            }
            _ => runs.push((*r, 1)),
        }
    }
    let line = |(r, n): &(Range, usize)| match n {
        1 => format!("  bytes {}..{} ({})", r.offset, r.end(), Iec(r.len)),
        n => format!("  bytes {}..{} ({}, in {n} pieces)", r.offset, r.end(), Iec(r.len)),
    };
    let ranges = &runs[..];
    if ranges.len() <= HEAD + TAIL + 1 {
        return ranges.iter().map(line).collect::<Vec<_>>().join("\n");
    }
    let mut out: Vec<String> = ranges[..HEAD].iter().map(line).collect();
    out.push(format!("  ... {} more ranges ...", ranges.len() - HEAD - TAIL));
    out.extend(ranges[ranges.len() - TAIL..].iter().map(line));
    out.join("\n")
}

/// A test's ranges, normalised for a target like `d`, and the user's
/// consent to writing them on a real target (refused, naming them, without
/// `--write`).
pub fn consented(spec: &str, d: &TargetDescription, declared: Vec<Range>, consent: &Consent) -> CliResult<Vec<Range>> {
    let ranges = ranges::normalize(declared, d.size_bytes, d.logical_block_size.into())?;
    if d.kind != TargetKind::Sim && !consent.write {
        let total: u64 = ranges.iter().map(|r| r.len).sum();
        return Err(CliError::usage(format!(
            "this test writes to {spec}; it would write {} in {}, in these ranges:\n{}",
            Iec(total),
            crate::units::count(ranges.len() as u64, "piece", "pieces"),
            listing(&ranges)
        ))
        .hint("add --write to consent (the original bytes are journalled and restored unless --no-preserve)"));
    }
    Ok(ranges)
}

/// A real target held for writing for the whole run: no pending journal for
/// its bytes, every alias claimed, and the device opened exclusively, once.
/// Each writing test then gets a preserving target of its own over it
/// ([`Writable::preserve`]), with its ranges and its journal.
pub struct Writable {
    pub target: Box<dyn Target>,
    pub claim: Claim,
    spec: String,
    path: std::path::PathBuf,
}

impl Writable {
    /// The refusals of a writing run, before anything is written: a
    /// pending journal for the same bytes, an alias in use, the device
    /// busy; then the exclusive open.
    pub fn open(target: &args::TargetArg, consent: &Consent, engine: EngineChoice) -> CliResult<Writable> {
        let args::Resolved::Path(path) = &target.resolved else {
            return Err(
                CliError::failed("internal: a simulated card is not opened for writing this way")
                    .hint("this is a flashlab bug; please report it with the command line"),
            );
        };
        let spec = target.text.as_str();
        // Every alias of the target (a file's loop devices, a loop device's
        // backing file, loops over loops) is claimed before the target
        // itself is opened.
        let claim = safety::claim::claim(path)?;
        // Under the claim: a run that crashed a moment ago, while this one
        // waited for it, has left its journal by now.
        refuse_pending(spec, path, consent)?;
        // From here a Ctrl-C or SIGTERM stops the run at a request boundary
        // and restores; before the journal exists, not after.
        safety::signals::install();
        settle(&claim, spec);
        let opened = open::open(
            target,
            OpenOptions {
                write: true,
                exclusive: true,
                engine,
            },
        )?;
        Ok(Writable {
            target: opened.into_target(),
            claim,
            spec: spec.to_string(),
            path: path.clone(),
        })
    }

    /// A preserving target over the held target for one test's `ranges`
    /// (already consented): the journal directory checked off the target,
    /// the identity and fingerprint taken, the journal's header made
    /// durable. With `--no-preserve`, no journal, and a line saying what
    /// is destroyed.
    pub fn preserve(&mut self, ranges: Vec<Range>, consent: &Consent) -> CliResult<PreservingTarget<'_>> {
        let (spec, path) = (self.spec.as_str(), self.path.as_path());
        let d = self.target.description().clone();
        let total: u64 = ranges.iter().map(|r| r.len).sum();
        let journal = if consent.no_preserve {
            None
        } else {
            let dir = consent.journal_dir();
            safety::claim::check_journal_dir_off_target(&dir, path, &self.claim.aliases)?;
            safety::check_journal_dir(&dir, total)?;
            let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            let mut identity = Identity::of(path, d.size_bytes);
            let mut reader = self.target.independent_reader().ok_or_else(|| {
                CliError::failed(format!("{spec}: cannot open a second, read-only descriptor"))
                    .hint("the journal reads originals and verifies restores through one; check permissions")
            })?;
            identity.take_fingerprint(reader.as_mut(), &ranges);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let header = Header {
                target: canon.display().to_string(),
                size_bytes: d.size_bytes,
                identity,
                created_unix: now.as_secs(),
                created_ns: u64::try_from(now.as_nanos()).unwrap_or(u64::MAX),
                sequence: safety::pending::next_sequence(&safety::pending::list_all(&consent.journal_dirs())),
                pid: std::process::id(),
                ranges: ranges.iter().map(|r| [r.offset, r.len]).collect(),
                total_bytes: total,
            };
            Some((dir, header))
        };
        // Counted in pieces, as the line after the test counts them (when
        // this line counted ranges, a run listed 31 and said "37 ranges"
        // after).
        let pieces = crate::units::count(ranges.len() as u64, "piece", "pieces");
        if crate::console::stdio::brief() {
            crate::errln!("will write {} of {spec} in {pieces}", Iec(total));
        } else {
            crate::errln!(
                "will write {} of {spec} in {pieces}, in these ranges:\n{}",
                Iec(total),
                listing(&ranges)
            );
        }
        if consent.no_preserve {
            crate::errln!(
                "--no-preserve: no journal; {total} bytes ({}) of {spec} will be destroyed",
                Iec(total)
            );
        }
        Ok(PreservingTarget::new(
            Box::new(self.target.as_mut()),
            ranges,
            journal
                .as_ref()
                .map(|(d, h)| (d.as_path(), h.clone(), Registry::system())),
        )?)
    }
}

impl Drop for Writable {
    /// The run is over (its journals restored, or kept for `flashlab
    /// restore`): every other name of the bytes shows them as they are now.
    fn drop(&mut self) {
        let _ = self.target.sync();
        settle(&self.claim, &self.spec);
    }
}

/// [`Claim::settle`], saying on stderr what could not be settled.
pub fn settle(claim: &Claim, spec: &str) {
    for f in claim.settle(true) {
        crate::errln!("note: {spec}: could not flush another name of its bytes: {f}");
    }
}

/// A writing test on a simulated card: no consent or journal (nothing real is
/// written), the ranges still enforced.
pub fn simulated<'a>(
    spec: &str,
    card: Box<dyn crate::targets::Target + 'a>,
    ranges: Vec<Range>,
) -> CliResult<PreservingTarget<'a>> {
    let total: u64 = ranges.iter().map(|r| r.len).sum();
    // One line: nothing real is at stake, and the ranges of every test of
    // a probe would bury its result.
    crate::detail!(
        "simulated card: will write {} in {} range{} of {spec}",
        Iec(total),
        ranges.len(),
        if ranges.len() == 1 { "" } else { "s" }
    );
    Ok(PreservingTarget::in_memory(card, ranges)?)
}

/// A journal an earlier run left (a crash, a power cut) holds bytes of
/// this target that are not back yet, under whatever name, user or journal
/// directory that run used: writing now would take the crashed run's
/// pattern for the original. Say so first, and stop. A damaged journal
/// that might hold them stops the run too.
fn refuse_pending(spec: &str, path: &Path, consent: &Consent) -> CliResult<()> {
    let Some(p) = pending_journal(path, consent) else {
        return Ok(());
    };
    let restore = format!(
        "flashlab restore {}{}",
        crate::console::shell_word(spec),
        journal_dir_of(&p.found.path, &consent.default_journal_dir)
    );
    Err(match &p.holds {
        Ok(bytes) => CliError::usage(format!(
            "{spec} has a pending journal from an earlier run that did not finish ({}, {} of its bytes are not \
             back yet); nothing was written",
            p.found.path.display(),
            Iec(*bytes)
        ))
        .hint(format!("run `{restore}` first; it puts those bytes back")),
        Err(why) => unreadable(
            &p.found,
            why,
            &format!("it may hold bytes of {spec}; nothing was written"),
            &consent.default_journal_dir,
        ),
    })
}

/// A pending journal that cannot be read (`why`), as an error: what is
/// wrong, and what to do about it (restore it as the user who made it,
/// bring its directory back, or set it aside once it is lost for good).
/// `default`: the journal directory a restore looks in by itself; one
/// elsewhere is named in the listing command.
pub fn unreadable(f: &Found, why: &str, consequence: &str, default: &Path) -> CliError {
    let of = f.best_header().map(|h| format!(" of {}", h.target)).unwrap_or_default();
    let aside = format!(
        "`flashlab restore --set-aside {}`",
        crate::console::shell_word(&f.path.to_string_lossy())
    );
    let hint = if f.damaged() || f.header.is_ok() {
        format!(
            "it cannot be trusted: `flashlab restore{}` lists it with what is wrong; once you have looked at it, set \
             it aside with {aside} (it is kept, renamed; the bytes stay as they are)",
            journal_dir_of(&f.path, default)
        )
    } else if f.out_of_reach {
        format!("bring its directory back (mount the drive it is on); if it is lost for good, {aside}")
    } else {
        let by = f.uid.map(|u| format!(" (uid {u})")).unwrap_or_default();
        format!("restore it as the user who made it{by}, or as root; if it is lost for good, {aside}")
    };
    // Damage is the journal's, wherever it is read; the rest is this
    // user's or this machine's reach.
    let is = if f.damaged() {
        "is damaged"
    } else {
        "cannot be read here"
    };
    CliError::usage(format!("a pending journal{of} {is}: {why}; {consequence}")).hint(hint)
}

/// ` --journal-dir DIR` naming the directory that holds `journal`, unless
/// it is the default one (`default`, where a restore looks anyway).
pub fn journal_dir_of(journal: &Path, default: &Path) -> String {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    match journal.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) if canon(d) != canon(default) => {
            format!(" --journal-dir {}", crate::console::shell_word(&d.to_string_lossy()))
        }
        _ => String::new(),
    }
}

/// A pending journal over a target's bytes, and how many of them it holds
/// (or why it cannot be read, so it might hold any).
pub struct PendingJournal {
    pub found: Found,
    pub holds: Result<u64, String>,
}

/// A journal no running flashlab holds, found anywhere a run can find one
/// ([`safety::pending::list_all`]: the directory `consent` names, the
/// default one, the registry), whose bytes are among `path`'s bytes by
/// identity (the file or disk under both, whatever path or loop number
/// either run used; by path and file for journals of earlier versions),
/// or which cannot be read and might hold them.
pub fn pending_journal(path: &Path, consent: &Consent) -> Option<PendingJournal> {
    let live = Identity::of(path, 0);
    safety::pending::list_all(&consent.journal_dirs())
        .into_iter()
        .find_map(|found| {
            if found.out_of_reach || !found.covers(path, &live) || found.is_live() {
                return None;
            }
            // What it holds: a run journals a range just before writing it,
            // so an empty journal (a crash before the first write) holds
            // nothing of the target and nothing of it was written.
            let holds = match &found.header {
                Err(e) => Err(e.to_string()),
                Ok(_) => match safety::journal::Journal::open(&found.path) {
                    Ok(opened) if opened.bytes() == 0 => return None,
                    Ok(opened) => Ok(opened.bytes()),
                    Err(e) => Err(e.to_string()),
                },
            };
            Some(PendingJournal { found, holds })
        })
}

/// The restore at the end of a writing test failed: the original data is
/// NOT back, and the journal (if any) is kept. Say so first, and give the
/// exact command that puts it back once the cause is fixed.
pub fn restore_failed(
    spec: &str,
    journal: Option<&Path>,
    default_dir: &Path,
    e: crate::safety::SafetyError,
) -> CliError {
    let cause = CliError::from(e);
    let Some(j) = journal else {
        return cause;
    };
    CliError::failed(format!(
        "the original data of {spec} is NOT back yet: restoring it failed: {}",
        cause.message
    ))
    .hint(format!(
        "its journal is kept ({}); once the cause is fixed (free descriptors, space, the device), run `flashlab \
         restore {spec}{}`",
        j.display(),
        journal_dir_of(j, default_dir)
    ))
}

/// What an interrupted writing test did before exiting, on stderr.
pub fn report_interrupted(sig: i32, outcome: &safety::Outcome) {
    if outcome.preserved && outcome.bytes_written == 0 {
        crate::errln!(
            "interrupted by {} before the test wrote anything: the device is as it was",
            crate::safety::signals::name(sig)
        );
    } else if outcome.preserved {
        crate::errln!(
            "interrupted by {}: {}; the original data is back",
            crate::safety::signals::name(sig),
            outcome.put_back()
        );
    } else {
        crate::errln!(
            "interrupted by {}: nothing was journalled (--no-preserve)",
            crate::safety::signals::name(sig)
        );
    }
}
