//! `flashlab emulate`: serve a simulated card as a block device until
//! Ctrl-C or SIGTERM, then detach and unmount (see [`crate::emulate`]).

use std::time::Duration;

use crate::document::RunDocument;
use crate::document::bodies::{Body, EmulatingBody};
use crate::emulate::{self, EmulateError};
use crate::error::{CliError, CliResult};

/// How often the live counters are printed (when something happened).
const COUNTERS_EVERY: Duration = Duration::from_secs(2);

fn cli(e: EmulateError) -> CliError {
    match e {
        EmulateError::Refused { why, fix } => CliError::usage(why).hint(fix),
        EmulateError::Failed { why, fix } => CliError::failed(why).hint(fix),
    }
}

/// `emulate --cleanup`: what was left by killed emulations, removed. A
/// live emulation that is stopped (its device hangs every program that
/// reads it) is left alone, and said, with the command that ends it; with
/// `--force PID` (the user's word), that emulation is ended.
pub fn cleanup(dir: &std::path::Path, force: Option<u32>) -> CliResult<()> {
    if let Some(pid) = force {
        crate::errln!("ended: {}", emulate::stale::force(dir, pid).map_err(cli)?);
        return Ok(());
    }
    let c = emulate::stale::cleanup(dir).map_err(cli)?;
    if c.done.is_empty() && c.stopped.is_empty() {
        crate::errln!("nothing to clean up: no emulation was left behind");
    }
    for line in c.done {
        crate::errln!("cleaned up: {line}");
    }
    if c.stopped.is_empty() {
        return Ok(());
    }
    let why: Vec<String> = c.stopped.iter().map(emulate::stale::Stopped::why).collect();
    let fix: Vec<String> = c.stopped.iter().map(emulate::stale::Stopped::fix).collect();
    Err(CliError::failed(format!(
        "{}; --cleanup ends a live emulation only when told to",
        why.join("; ")
    ))
    .hint(fix.join("; ")))
}

/// Serve until a signal: `announce` prints the ready document (the device
/// path first) in the run's format; the summary goes to stderr at the end,
/// and to `stopped` as the same document with what the card saw.
pub fn run(o: &emulate::Options, announce: &dyn Fn(&RunDocument), stopped: &dyn Fn(&RunDocument)) -> CliResult<()> {
    crate::safety::signals::install();
    crate::safety::signals::install_medium();
    let em = emulate::start(o).map_err(cli)?;
    let r = &em.ready;
    let mut doc = RunDocument::new(crate::document::CommandName::Emulate, None);
    doc.body = Body::Emulating(EmulatingBody {
        emulate: r.clone(),
        stopped: None,
    });
    if let Some((message, hint)) = emulate::scale_warning(r) {
        doc.warnings.push(crate::document::Note {
            kind: crate::document::NoteKind::Engine,
            message,
            hint: Some(hint),
        });
    }
    doc.finish(None);
    // stdout is line-buffered: the device is out before the wait.
    announce(&doc);
    crate::errln!("serving {} until Ctrl-C or SIGTERM", r.device);
    let sig = emulate::run_until_signal(&em, COUNTERS_EVERY);
    let device = em.ready.device.clone();
    let s = em.stop().map_err(cli)?;
    let sizes: Vec<String> = {
        let mut v: Vec<(&u32, &u64)> = s.sizes.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1));
        v.iter()
            .take(5)
            .map(|(b, n)| format!("{} x{n}", crate::units::Iec(u64::from(**b))))
            .collect()
    };
    let line = format!(
        "{}: stopped by {}; {} reads ({}), {} writes ({}), {} flushes, {} discards ({}); {} merges; at most {} in \
         flight; {:.1} device-seconds in {:.1} s",
        device,
        crate::safety::signals::name(sig),
        s.reads,
        crate::units::Iec(s.bytes_read),
        s.writes,
        crate::units::Iec(s.bytes_written),
        s.flushes,
        s.discards,
        crate::units::Iec(s.bytes_discarded),
        s.gc_events,
        s.most_in_flight,
        s.device_s,
        s.wall_s
    );
    crate::errln!("{}", crate::console::wrap(&line, "", "  "));
    crate::errln!("{}", crate::console::wrap(&flash_line(&s.flash_work), "", "  "));
    if !sizes.is_empty() {
        let line = format!("request sizes the card saw: {}", sizes.join(", "));
        crate::errln!("{}", crate::console::wrap(&line, "", "  "));
    }
    for line in emulate::timing_lines(&s) {
        crate::errln!("{}", crate::console::wrap(&line, "", "  "));
    }
    crate::errln!("detached {device} and unmounted the card's FUSE filesystem");
    if let Body::Emulating(e) = &mut doc.body {
        e.stopped = Some(Box::new(s));
    }
    stopped(&doc);
    Ok(())
}

/// The card's flash work in one line, every count exact.
fn flash_line(f: &crate::sim::ftl::FlashReport) -> String {
    let w = &f.work;
    let amplification = f
        .amplification
        .map_or_else(|| "none (nothing written)".to_string(), |a| format!("{a:.2}"));
    format!(
        "flash work: {} pages of {} programmed for the host ({} read-modify-written), {} copied by merges, {} by \
         garbage collection; {} erases on {} of {} blocks (at most {} of {} rated, {:.2} a block on average); \
         amplification {amplification}",
        w.host_pages,
        crate::units::Iec(f.page_size_bytes),
        w.rmw_pages,
        w.merge_copies,
        w.gc_copies,
        w.erases,
        f.blocks_erased,
        f.blocks,
        f.most_erases,
        f.rated_pe_cycles,
        f.mean_erases,
    )
}
