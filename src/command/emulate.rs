//! `flashlab emulate`: serve a simulated card as a block device until
//! Ctrl-C or SIGTERM, then detach and unmount (see [`crate::emulate`]).

use std::time::Duration;

use crate::document::RunDocument;
use crate::document::bodies::{Body, EmulatingBody};
use crate::emulate::{self, EmulateError};
use crate::error::{CliError, CliResult};
use crate::units::count;

/// How often the live counters are printed where stderr is not a
/// terminal (a log), and then only when they changed: a line every 2 s for
/// eight minutes had filled a pane with identical lines.
const COUNTERS_EVERY: Duration = Duration::from_secs(2);

/// How often the one line of live counters is redrawn on a terminal.
const LIVE_EVERY: Duration = Duration::from_secs(1);

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
    // What "open: 3/6 in order" counts, said once.
    let line = format!(
        "serving {} until Ctrl-C or SIGTERM (AUs: open now/the most the card keeps open)",
        r.device
    );
    crate::errln!("{}", crate::console::wrap(&line, "", "  "));
    let sig = counters(&em);
    let device = em.ready.device.clone();
    let em_record = em.ready.record.clone();
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
        "{}: stopped by {}; {} ({}), {} ({}), {}, {} ({}); {}; at most {} in flight; {:.1} device-seconds in \
         {:.1} s",
        device,
        crate::safety::signals::name(sig),
        count(s.reads, "read", "reads"),
        crate::units::Iec(s.bytes_read),
        count(s.writes, "write", "writes"),
        crate::units::Iec(s.bytes_written),
        count(s.flushes, "flush", "flushes"),
        count(s.discards, "discard", "discards"),
        crate::units::Iec(s.bytes_discarded),
        count(s.gc_events, "merge", "merges"),
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
    if let (Some(n), Some(path)) = (s.recorded, &em_record) {
        let line = format!(
            "recorded {} in the order the card took them: {path}",
            count(n, "request", "requests")
        );
        crate::errln!("{}", crate::console::wrap(&line, "", "  "));
    }
    if let Body::Emulating(e) = &mut doc.body {
        e.stopped = Some(Box::new(s));
    }
    stopped(&doc);
    Ok(())
}

/// Serve until a signal, showing the live counters: on a terminal one
/// line redrawn in place (the progress display's), elsewhere a line when
/// they changed, at most every [`COUNTERS_EVERY`].
fn counters(em: &emulate::Emulation) -> i32 {
    use std::io::IsTerminal;
    let kept = (em.ready.open_aus_linear, em.ready.open_aus_random);
    let mut before = emulate::Live::default();
    if !std::io::stderr().is_terminal() {
        let mut shown = emulate::Live::default();
        return emulate::run_until_signal(em, COUNTERS_EVERY, &mut |now, secs| {
            if let Some(line) = logged(now, &mut before, &mut shown, secs, kept) {
                crate::errln!("{line}");
            }
        });
    }
    let live = crate::runner::progress::Progress::start(&Default::default(), "serving", None);
    let sig = emulate::run_until_signal(em, LIVE_EVERY, &mut |now, secs| {
        live.live(&now.line(&before, secs, kept));
        before = *now;
    });
    live.clear();
    sig
}

/// The line a log gets for the counters `now`, where they changed since
/// the last line (`shown`); the rate over the `secs` since `before`.
fn logged(
    now: &emulate::Live,
    before: &mut emulate::Live,
    shown: &mut emulate::Live,
    secs: f64,
    kept: (u64, u64),
) -> Option<String> {
    let line = now.changed(shown).then(|| now.line(before, secs, kept));
    *before = *now;
    if line.is_some() {
        *shown = *now;
    }
    line
}

/// The card's flash work in one line, every count exact.
fn flash_line(f: &crate::sim::ftl::FlashReport) -> String {
    let w = &f.work;
    let amplification = f
        .amplification
        .map_or_else(|| "none (nothing written)".to_string(), |a| format!("{a:.2}"));
    format!(
        "flash work: {} of {} programmed for the host ({} read-modify-written), {} copied by merges, {} by \
         garbage collection; {} on {} of {} blocks (at most {} of {} rated, {:.2} a block on average); \
         amplification {amplification}",
        count(w.host_pages, "page", "pages"),
        crate::units::Iec(f.page_size_bytes),
        w.rmw_pages,
        w.merge_copies,
        w.gc_copies,
        count(w.erases, "erase", "erases"),
        f.blocks_erased,
        f.blocks,
        f.most_erases,
        f.rated_pe_cycles,
        f.mean_erases,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::Live;

    /// The line fits beside the spinner at 80 columns with the counts of
    /// a probe through an emulated card (its 5-digit read count had cut
    /// "random" to "rando").
    #[test]
    fn the_live_line_fits_80_columns_with_a_probe_behind_it() {
        let now = Live {
            reads: 40_127,
            writes: 4_631,
            bytes: 0,
            merges: 554,
            open_in_order: 6,
            open_random: 24,
        };
        let line = now.line(&Live::default(), 2.0, (6, 24));
        assert_eq!(
            line,
            "40.1k reads, 4631 writes, 0.0 MB/s, 554 merges; AUs 6/6 in order, 24/24 random"
        );
        assert!(line.chars().count() + 2 <= 80, "{line}");
    }

    /// Without a terminal a line is written only when the counts changed:
    /// an idle card writes none, however long it waits.
    #[test]
    fn a_log_gets_a_line_only_when_the_counters_change() {
        let kept = (3, 3);
        let (mut before, mut shown) = (Live::default(), Live::default());
        let busy = Live {
            reads: 1,
            writes: 40,
            bytes: 4_000_000,
            merges: 1,
            open_in_order: 3,
            open_random: 2,
        };
        let mut log = |now: &Live| logged(now, &mut before, &mut shown, 2.0, kept);
        assert_eq!(log(&Live::default()), None);
        assert_eq!(
            log(&busy).as_deref(),
            Some("1 read, 40 writes, 2.0 MB/s, 1 merge; AUs 3/3 in order, 2/3 random")
        );
        assert_eq!(log(&busy), None);
        assert_eq!(log(&busy), None);
        let more = Live {
            writes: 41,
            bytes: 4_004_096,
            ..busy
        };
        assert_eq!(
            log(&more).as_deref(),
            Some("1 read, 41 writes, 0.0 MB/s, 1 merge; AUs 3/3 in order, 2/3 random")
        );
    }
}
