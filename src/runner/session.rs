//! Opening a target for a writing test: consent for real targets, every alias
//! claimed, the journal directory checked, the identity taken, and the
//! preserving target built. Refusals happen here, before anything is written.

use std::path::{Path, PathBuf};

use crate::error::{CliError, CliResult};
use crate::runner::open::{self, Opened};
use crate::safety::claim::Claim;
use crate::safety::identity::Identity;
use crate::safety::journal::Header;
use crate::safety::ranges::{self, Range};
use crate::safety::{self, PreservingTarget};
use crate::target::real::{EngineChoice, OpenOptions, RealTarget};
use crate::target::spec::TargetSpec;
use crate::target::{Target, TargetError};
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
}

/// A target opened for writing behind the preserving target, with its
/// aliases claimed until the data is back.
pub struct Session {
    pub target: PreservingTarget<'static>,
    pub claim: Option<Claim>,
}

/// The declared ranges for the consent line: every one when there are few, the
/// first and last few around a count when a sweep declares a hundred AUs.
fn listing(ranges: &[Range]) -> String {
    const HEAD: usize = 4;
    const TAIL: usize = 2;
    let line = |r: &Range| format!("  bytes {}..{} ({})", r.offset, r.end(), Iec(r.len));
    if ranges.len() <= HEAD + TAIL + 1 {
        return ranges.iter().map(line).collect::<Vec<_>>().join("\n");
    }
    let mut out: Vec<String> = ranges[..HEAD].iter().map(line).collect();
    out.push(format!("  ... {} more ranges ...", ranges.len() - HEAD - TAIL));
    out.extend(ranges[ranges.len() - TAIL..].iter().map(line));
    out.join("\n")
}

/// What uses a busy block device, for the refusal message.
fn users(path: &Path) -> String {
    let u = safety::claim::users_of(path);
    if u.is_empty() {
        String::new()
    } else {
        format!(" ({})", u.join(", "))
    }
}

/// Open `spec` read-write and exclusively; a busy device names its users.
fn open_exclusive(spec: &str, engine: EngineChoice) -> CliResult<Box<dyn Target>> {
    let opts = OpenOptions {
        write: true,
        exclusive: true,
        engine,
    };
    match open::parse(spec)? {
        TargetSpec::Path(path) => match RealTarget::open(&path, spec, opts) {
            Ok(t) => Ok(Box::new(t)),
            Err(TargetError::Busy { .. }) => Err(CliError::usage(format!(
                "{spec} is in use{}; nothing was written",
                users(&path)
            ))
            .hint("unmount it and its partitions (and stop what holds it) first")),
            Err(e) => Err(e.into()),
        },
        TargetSpec::Sim { .. } => Ok(open::open(spec, opts)?.into_target()),
    }
}

/// A writing test on a simulated card: no consent or journal (nothing real is
/// written), the ranges still enforced.
pub fn simulated(spec: &str, card: crate::sim::SimTarget, declared: Vec<Range>) -> CliResult<Session> {
    let d = card.description().clone();
    let ranges = ranges::normalize(declared, d.size_bytes, d.logical_block_size.into())?;
    let total: u64 = ranges.iter().map(|r| r.len).sum();
    // One line: nothing real is at stake, and the ranges of every test of
    // a probe would bury its result.
    crate::errln!(
        "simulated card: will write {} in {} range{} of {spec}",
        Iec(total),
        ranges.len(),
        if ranges.len() == 1 { "" } else { "s" }
    );
    let target = PreservingTarget::new(Box::new(card), ranges, None)?;
    Ok(Session { target, claim: None })
}

/// Everything before a writing test's first write, in order: geometry
/// (read-only), ranges checked and shown, consent, aliases claimed, the
/// exclusive open, the journal directory checked off the target, identity and
/// fingerprint, and the journal's header made durable.
pub fn open_for_writing(
    spec: &str,
    declared: Vec<Range>,
    consent: &Consent,
    engine: EngineChoice,
) -> CliResult<Session> {
    let probe = open::read_only(spec, engine)?;
    let d = probe.as_target().description().clone();
    let real = matches!(probe, Opened::Real(_));
    drop(probe);
    let ranges = ranges::normalize(declared, d.size_bytes, d.logical_block_size.into())?;
    let total: u64 = ranges.iter().map(|r| r.len).sum();
    let listing = listing(&ranges);
    if real && !consent.write {
        return Err(CliError::usage(format!(
            "this test writes to {spec}; it would write {} in these ranges:\n{listing}",
            Iec(total)
        ))
        .hint("add --write to consent (the original bytes are journalled and restored unless --no-preserve)"));
    }
    let path = Path::new(spec);
    if real {
        refuse_pending(spec, path, consent)?;
    }
    // Every alias of the target (a file's loop devices, a loop device's
    // backing file) is claimed before the target itself is opened.
    let claim = if real { Some(safety::claim::claim(path)?) } else { None };
    let target = open_exclusive(spec, engine)?;
    let journal = if real && !consent.no_preserve {
        let dir = consent.journal_dir.clone().unwrap_or_else(safety::default_journal_dir);
        if let Some(c) = &claim {
            safety::claim::check_journal_dir_off_target(&dir, path, &c.aliases)?;
        }
        safety::check_journal_dir(&dir, total)?;
        let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut identity = Identity::of(path, d.size_bytes);
        let mut reader = target.independent_reader().ok_or_else(|| {
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
            sequence: Header::next_sequence(&dir),
            pid: std::process::id(),
            ranges: ranges.iter().map(|r| [r.offset, r.len]).collect(),
            total_bytes: total,
        };
        Some((dir, header))
    } else {
        None
    };
    crate::errln!("will write {} of {spec} in these ranges:\n{listing}", Iec(total));
    if real && consent.no_preserve {
        crate::errln!(
            "--no-preserve: no journal; {total} bytes ({}) of {spec} will be destroyed",
            Iec(total)
        );
    }
    let target = PreservingTarget::new(target, ranges, journal.as_ref().map(|(d, h)| (d.as_path(), h.clone())))?;
    Ok(Session { target, claim })
}

/// A writing run's refusals, made before anything runs: a pending journal
/// for the same bytes, an alias in use, the device busy. probe makes them up
/// front, so `probe --write` on a mounted card is refused (exit 2) as
/// `bench --write` is, instead of leaving out its writing steps.
pub fn preflight(spec: &str, consent: &Consent, engine: EngineChoice) -> CliResult<()> {
    let path = Path::new(spec);
    refuse_pending(spec, path, consent)?;
    let claim = safety::claim::claim(path)?;
    let target = open_exclusive(spec, engine)?;
    drop(target);
    drop(claim);
    Ok(())
}

/// A journal an earlier run left (a crash, a power cut) holds bytes of
/// this target that are not back yet, under whatever name that run used:
/// writing now would take the crashed run's pattern for the original. Say so
/// first, and stop.
fn refuse_pending(spec: &str, path: &Path, consent: &Consent) -> CliResult<()> {
    match pending_journal(path, consent) {
        Some((j, bytes)) => Err(CliError::usage(format!(
            "{spec} has a pending journal from an earlier run that did not finish ({}, {} of its bytes are \
             not back yet); nothing was written",
            j.display(),
            Iec(bytes)
        ))
        .hint(format!(
            "run `flashlab restore {spec}{}` first; it puts those bytes back",
            journal_dir_arg(consent)
        ))),
        None => Ok(()),
    }
}

/// ` --journal-dir DIR` when the user gave one, for commands we suggest.
pub fn journal_dir_arg(consent: &Consent) -> String {
    consent
        .journal_dir
        .as_ref()
        .map(|d| format!(" --journal-dir {}", d.display()))
        .unwrap_or_default()
}

/// A journal no running flashlab holds, in the journal directory `consent`
/// names or the default one, whose bytes are among `path`'s bytes by
/// identity (the file or disk under both, whatever path or loop number
/// either run used; by path and file for journals of earlier versions),
/// with its journalled bytes.
pub fn pending_journal(path: &Path, consent: &Consent) -> Option<(std::path::PathBuf, u64)> {
    let mut dirs = vec![safety::default_journal_dir()];
    if let Some(d) = &consent.journal_dir {
        dirs.insert(0, d.clone());
    }
    dirs.dedup();
    let live = Identity::of(path, 0);
    dirs.iter()
        .flat_map(|d| safety::journal::list(d))
        .find_map(|(j, header)| {
            let h = header.ok()?;
            if !belongs_to(&h, path, &live) || safety::journal::is_live(&j) {
                return None;
            }
            // What it holds: a run journals a range just before writing it,
            // so an empty journal (a crash before the first write) holds
            // nothing of the target and nothing of it was written. One that
            // cannot be read is pending: restore says what is wrong with it.
            match safety::journal::Journal::open(&j) {
                Ok(opened) if opened.bytes() == 0 => None,
                Ok(opened) => Some((j, opened.bytes())),
                Err(_) => Some((j, h.total_bytes)),
            }
        })
}

/// Whether the journal with header `h` holds bytes of the target at `path`
/// (whose identity now is `live`): its bytes rest on the same file or disk
/// (any name: another loop number, a hard link, a loop over a loop, the
/// backing file), or, for a journal of an earlier version, the same path,
/// the same backing file, or the same serial.
pub fn belongs_to(h: &Header, path: &Path, live: &Identity) -> bool {
    if !h.identity.layers.is_empty() {
        let same_serial = match (&h.identity.serial, &live.serial) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        return same_serial && h.identity.covers_bytes_of(&h.ranges, &live.layers);
    }
    let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if h.target == canon.display().to_string() {
        return true;
    }
    let same_file = h.identity.file.is_some() && h.identity.file == live.file;
    let same_serial = h.identity.serial.is_some() && h.identity.serial == live.serial;
    same_file || same_serial
}

/// The restore at the end of a writing test failed: the original data is
/// NOT back, and the journal (if any) is kept. Say so first, and give the
/// exact command that puts it back once the cause is fixed.
pub fn restore_failed(
    spec: &str,
    journal: Option<&Path>,
    consent: &Consent,
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
        journal_dir_arg(consent)
    ))
}

/// What an interrupted writing test did before exiting, on stderr.
pub fn report_interrupted(sig: i32, outcome: &safety::Outcome) {
    if outcome.preserved {
        crate::errln!(
            "interrupted by {}: {} bytes restored and verified; the original data is back",
            crate::safety::signals::name(sig),
            outcome.bytes_restored
        );
    } else {
        crate::errln!(
            "interrupted by {}: nothing was journalled (--no-preserve)",
            crate::safety::signals::name(sig)
        );
    }
}
