//! `flashlab debug write-pattern`: overwrite declared ranges with a seeded
//! pattern through the preserving write path, then restore. The crash and
//! damage tests drive the journal end to end with it.

use crate::args;
use crate::document::RunDocument;
use crate::document::bodies::{Body, PatternBody};
use crate::error::CliResult;
use crate::runner::open;
use crate::runner::writable::{self, Consent, Writable, report_interrupted};
use crate::safety::ranges::Range;
use crate::safety::{self, signals};
use crate::targets::real::EngineChoice;
use crate::targets::{AlignedBuf, Request, Target, TargetError, run_all};

/// Write the pattern `passes` times, `pause_ms` between writes (for signal
/// tests); the data is back before anything is reported.
pub fn run(
    target: &args::TargetArg,
    declared: Vec<Range>,
    passes: u32,
    pause_ms: u64,
    consent: &Consent,
    engine: EngineChoice,
) -> CliResult<RunDocument> {
    let spec = target.text.as_str();
    let opened = open::read_only(target, engine)?;
    let d = opened.as_target().description().clone();
    let ranges = writable::consented(spec, &d, declared, consent)?;
    let mut held = None;
    let mut p = match opened {
        open::Opened::Sim(card) => writable::simulated(spec, card, ranges)?,
        open::Opened::Real(t) => {
            drop(t);
            held.insert(Writable::open(target, consent, engine)?)
                .preserve(ranges, consent)?
        }
    };
    signals::install();
    if let Some(j) = p.journal_path() {
        crate::errln!("journal: {}", j.display());
    }
    let ranges = p.ranges().to_vec();
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
                match run_all(&mut p, &[Request::write(off, n, 0)], 1, &mut buf) {
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
    let journal = p.journal_path().map(std::path::Path::to_path_buf);
    let (written, outcome) = p.finish();
    let verified = outcome.as_ref().map_or(0, |o| o.verify_device_ns);
    let (desc, device_ns) = (written.description().clone(), written.device_time_ns() + verified);
    drop(written);
    drop(held);
    let outcome =
        outcome.map_err(|e| writable::restore_failed(spec, journal.as_deref(), &consent.default_journal_dir, e))?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if let Some(sig) = interrupted {
        report_interrupted(sig, &outcome);
    } else if outcome.preserved {
        crate::errln!(
            "done: wrote {} bytes, restored and verified {} bytes; journal deleted",
            outcome.bytes_written,
            outcome.bytes_restored
        );
    }
    let mut doc = RunDocument::new(crate::document::CommandName::DebugWritePattern, Some(desc));
    doc.body = Body::Pattern(PatternBody {
        outcome,
        interrupted_by: interrupted.map(|s| signals::name(s).to_string()),
    });
    doc.finish(Some(device_ns));
    match interrupted {
        // The document is still printed: the caller renders it, then exits
        // with the signal's code.
        Some(sig) => Err(crate::error::interrupted(sig).with_document(doc)),
        None => Ok(doc),
    }
}
