//! The writing side of the CLI, shared by every writing command: consent for real
//! targets, the in-use refusal, declared ranges printed before the first write,
//! the journal directory checks, and the hidden `debug write-pattern` workload
//! that drives the preservation journal end to end until the real writing tests
//! exist.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::resolve::{self, Opened};
use crate::device::{self, sysfs::Host};
use crate::error::{CliError, CliResult, Exit};
use crate::output::json;
use crate::safety::claim::Claim;
use crate::safety::identity::Identity;
use crate::safety::journal::Header;
use crate::safety::ranges::{self, Range};
use crate::safety::{self, Outcome, PreservingTarget, SafetyError, signals};
use crate::seam::real::{EngineChoice, OpenOptions};
use crate::seam::{AlignedBuf, Request, Target, TargetError, run_all};
use crate::units::Iec;

/// Options every writing command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct WriteOpts {
    /// Consent to writing to a real device or file (its data is preserved and
    /// restored unless --no-preserve).
    #[arg(long)]
    pub write: bool,
    /// Keep no journal: the written ranges are destroyed.
    #[arg(long)]
    pub no_preserve: bool,
    /// Where the preservation journal goes (default: /var/lib/flashlab/journals
    /// for root, else $XDG_STATE_HOME/flashlab/journals).
    #[arg(long, value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
}

pub fn safety_error(e: SafetyError) -> CliError {
    let msg = e.to_string();
    match e {
        SafetyError::Target(t) => resolve::target_error(t),
        SafetyError::VerifyFailed { .. } => CliError::failed(msg)
            .hint("the journal is kept: run `flashlab restore` (with --engine psync to rule out the engine)"),
        SafetyError::Corrupt { .. } => CliError::usage(msg)
            .hint("the journal cannot be trusted; nothing was written to the target and the journal is kept"),
        SafetyError::IdentityMismatch { .. } => {
            CliError::usage(msg).hint("nothing was written; if you are sure this is the same device, add --force")
        }
        SafetyError::JournalDir { .. } => {
            CliError::usage(msg).hint("choose another place with --journal-dir DIR (on a different device)")
        }
        SafetyError::InUse { .. } => CliError::usage(msg).hint(
            "unmount it (and every partition and loop device over the same bytes), or wait for the other run to end",
        ),
        SafetyError::Live { .. } => CliError::usage(msg)
            .hint("that run restores its data itself when it ends; `flashlab restore` is for journals left by a crash"),
        SafetyError::Journal { .. } => {
            CliError::failed(msg).hint("check the journal directory's disk (space, permissions)")
        }
        SafetyError::BadRange { .. } | SafetyError::PastEnd { .. } => {
            CliError::usage(msg).hint("ranges are OFFSET+LENGTH, aligned to the logical block, inside the target")
        }
    }
}

/// What uses a busy block device, for the refusal message.
fn users(path: &Path) -> String {
    let Ok(meta) = std::fs::metadata(path) else {
        return String::new();
    };
    if !std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type()) {
        return String::new();
    }
    match device::identify(&Host::system(), path, 0, 512, 512) {
        Ok(i) => {
            let mut u: Vec<String> = i
                .mounts
                .iter()
                .map(|m| format!("{} mounted on {}", m.source, m.mount_point))
                .collect();
            u.extend(i.swaps.iter().map(|s| format!("swap {s}")));
            u.extend(i.holders.iter().map(|h| format!("held by {h}")));
            if u.is_empty() {
                String::new()
            } else {
                format!(" ({})", u.join(", "))
            }
        }
        Err(_) => String::new(),
    }
}

/// A target opened for writing behind the preserving target, with its
/// aliases claimed. Refusals happen before anything is written.
pub struct Session {
    pub target: PreservingTarget<'static>,
    /// Held until the data is back.
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

pub fn open_for_writing(
    spec: &str,
    declared: Vec<Range>,
    opts: &WriteOpts,
    engine: EngineChoice,
) -> CliResult<Session> {
    // Geometry first, read-only, so ranges can be checked and shown.
    let probe = resolve::open(
        spec,
        OpenOptions {
            write: false,
            exclusive: false,
            engine,
        },
    )?;
    let (size, block, real) = match &probe {
        Opened::Real(t) => (t.description().size_bytes, t.description().logical_block_size, true),
        Opened::Sim(t) => (t.description().size_bytes, t.description().logical_block_size, false),
    };
    drop(probe);
    let ranges = ranges::normalize(declared, size, block.into()).map_err(safety_error)?;
    let total: u64 = ranges.iter().map(|r| r.len).sum();
    let listing = listing(&ranges);
    if real && !opts.write {
        return Err(CliError::usage(format!(
            "this test writes to {spec}; it would write {} in these ranges:\n{listing}",
            Iec(total)
        ))
        .hint("add --write to consent (the original bytes are journalled and restored unless --no-preserve)"));
    }
    let path = Path::new(spec);
    // Every alias of the target (a file's loop devices, a loop device's
    // backing file) is claimed before the target itself is opened.
    let claim = if real {
        Some(safety::claim::claim(path).map_err(safety_error)?)
    } else {
        None
    };
    let target: Box<dyn Target> = match resolve::open(
        spec,
        OpenOptions {
            write: true,
            exclusive: true,
            engine,
        },
    ) {
        Ok(Opened::Real(t)) => t,
        Ok(Opened::Sim(t)) => t,
        Err(e) if e.message.contains("busy") || e.message.contains("in use") => {
            return Err(
                CliError::usage(format!("{spec} is in use{}; nothing was written", users(path)))
                    .hint("unmount it and its partitions (and stop what holds it) first"),
            );
        }
        Err(e) => return Err(e),
    };
    let journal = if real && !opts.no_preserve {
        let dir = opts.journal_dir.clone().unwrap_or_else(safety::default_journal_dir);
        if let Some(c) = &claim {
            safety::claim::check_journal_dir_off_target(&dir, path, &c.aliases).map_err(safety_error)?;
        }
        safety::check_journal_dir(&dir, total).map_err(safety_error)?;
        let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut identity = Identity::of(path, size);
        match target.independent_reader() {
            Some(mut r) => identity.take_fingerprint(r.as_mut(), &ranges),
            None => {
                return Err(
                    CliError::failed(format!("{spec}: cannot open a second, read-only descriptor"))
                        .hint("the journal reads originals and verifies restores through one; check permissions"),
                );
            }
        }
        let header = Header {
            target: canon.display().to_string(),
            size_bytes: size,
            identity,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            pid: std::process::id(),
            ranges: ranges.iter().map(|r| [r.offset, r.len]).collect(),
            total_bytes: total,
        };
        Some((dir, header))
    } else {
        None
    };
    crate::errln!("will write {} of {spec} in these ranges:\n{listing}", Iec(total));
    if real && opts.no_preserve {
        crate::errln!(
            "--no-preserve: no journal; {total} bytes ({}) of {spec} will be destroyed",
            Iec(total)
        );
    }
    let target = PreservingTarget::new(target, ranges, journal.as_ref().map(|(d, h)| (d.as_path(), h.clone())))
        .map_err(safety_error)?;
    Ok(Session { target, claim })
}

#[derive(Serialize)]
struct PatternBody {
    outcome: Outcome,
    interrupted_by: Option<&'static str>,
}

/// `flashlab debug write-pattern`: overwrite the declared ranges with a seeded
/// pattern `passes` times through the preserving write path, then restore.
pub fn write_pattern(
    spec: &str,
    declared: Vec<Range>,
    passes: u32,
    pause_ms: u64,
    opts: &WriteOpts,
    engine: EngineChoice,
    as_json: bool,
) -> CliResult<()> {
    let mut s = open_for_writing(spec, declared, opts, engine)?;
    signals::install();
    if let Some(j) = s.target.journal_path() {
        crate::errln!("journal: {}", j.display());
    }
    let ranges = s.target.ranges().to_vec();
    let mut buf = AlignedBuf::new(safety::journal::CHUNK);
    let mut interrupted = None;
    let mut failed = None;
    'outer: for pass in 0..passes {
        for r in &ranges {
            let mut off = r.offset;
            while off < r.end() {
                let n = (r.end() - off).min(buf.len() as u64) as u32;
                for (i, w) in buf.as_mut_slice()[..n as usize].chunks_exact_mut(8).enumerate() {
                    let v = (off / 8 + i as u64) ^ u64::from(pass).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    w.copy_from_slice(&v.to_le_bytes());
                }
                // The preserving target refuses to write once a signal is pending.
                match run_all(&mut s.target, &[Request::write(off, n, 0)], 1, &mut buf) {
                    Ok(_) => {}
                    Err(TargetError::Interrupted { signal }) => {
                        interrupted = Some(signal);
                        break 'outer;
                    }
                    Err(e) => {
                        failed = Some(e);
                        break 'outer;
                    }
                }
                off += u64::from(n);
                if pause_ms > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(pause_ms));
                }
            }
        }
    }
    // Put back what we can before reporting anything, failures included.
    let (target, outcome) = s.target.finish();
    drop(s.claim);
    let outcome = outcome.map_err(safety_error)?;
    if let Some(e) = failed {
        return Err(resolve::target_error(e));
    }
    let sig_name = interrupted.map(signal_name);
    if let Some(sig) = interrupted {
        report_interrupted(sig, &outcome);
    } else if outcome.preserved {
        crate::errln!(
            "done: wrote {} bytes, restored and verified {} bytes; journal deleted",
            outcome.bytes_written,
            outcome.bytes_restored
        );
    }
    let desc = target.description().clone();
    if as_json {
        json::print(&json::Envelope {
            schema_version: json::SCHEMA_VERSION,
            command: "debug write-pattern",
            target: Some(&desc),
            device_time_s: Some(target.device_time_ns() as f64 / 1e9),
            body: PatternBody {
                outcome,
                interrupted_by: sig_name,
            },
        });
    }
    match interrupted {
        Some(sig) => Err(interrupted_error(sig)),
        None => Ok(()),
    }
}

fn signal_name(sig: i32) -> &'static str {
    if sig == libc::SIGTERM { "SIGTERM" } else { "SIGINT" }
}

/// What an interrupted writing test did before exiting.
pub fn report_interrupted(sig: i32, outcome: &safety::Outcome) {
    if outcome.preserved {
        crate::errln!(
            "interrupted by {}: {} bytes restored and verified; the original data is back",
            signal_name(sig),
            outcome.bytes_restored
        );
    } else {
        crate::errln!(
            "interrupted by {}: nothing was journalled (--no-preserve)",
            signal_name(sig)
        );
    }
}

/// Exit 130 for Ctrl-C, 143 for SIGTERM, once the data is back.
pub fn interrupted_error(sig: i32) -> CliError {
    let exit = if sig == libc::SIGTERM {
        Exit::Terminated
    } else {
        Exit::Interrupted
    };
    CliError {
        exit,
        message: format!("interrupted by {}", signal_name(sig)),
        hint: None,
    }
}
