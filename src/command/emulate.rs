//! `flashlab emulate`: serve a simulated card as a block device until
//! Ctrl-C or SIGTERM, then detach and unmount (see [`crate::emulate`]).

use std::time::Duration;

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

/// `emulate --cleanup`: what was left by killed emulations, removed.
pub fn cleanup() -> CliResult<()> {
    let done = emulate::stale::cleanup().map_err(cli)?;
    if done.is_empty() {
        crate::errln!("nothing to clean up: no emulation was left behind");
    }
    for line in done {
        crate::errln!("cleaned up: {line}");
    }
    Ok(())
}

/// Serve until a signal; the device path (or, with --json, one document)
/// on stdout first, then the profile; the summary on stderr at the end.
pub fn run(o: &emulate::Options, json: bool) -> CliResult<()> {
    crate::safety::signals::install();
    let em = emulate::start(o).map_err(cli)?;
    let r = &em.ready;
    if json {
        crate::outln!("{}", serde_json::to_string(r).expect("ready serialises"));
    } else {
        crate::outln!("{}", r.device);
        crate::outln!(
            "  {}: {} in sectors of {} B; AU {}, page {}; {} AUs open in order, {} random; FAT area {} AUs",
            r.spec,
            crate::units::Iec(r.size_bytes),
            r.sector_size,
            crate::units::Iec(r.au_size_bytes),
            crate::units::Iec(r.page_size_bytes),
            r.open_aus_linear,
            r.open_aus_random,
            r.fat_area_aus
        );
        crate::outln!(
            "  time scale {} (1 = real time); serving overhead {:.0} µs taken off each answer",
            r.time_scale,
            r.overhead_us
        );
    }
    // stdout is line-buffered: the device path is out before the wait.
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
    crate::errln!(
        "{}: stopped by {}; {} reads ({}), {} writes ({}), {} flushes; {} merges; at most {} in flight; {:.1} device-seconds in {:.1} s",
        device,
        crate::safety::signals::name(sig),
        s.reads,
        crate::units::Iec(s.bytes_read),
        s.writes,
        crate::units::Iec(s.bytes_written),
        s.flushes,
        s.gc_events,
        s.most_in_flight,
        s.device_s,
        s.wall_s
    );
    if !sizes.is_empty() {
        crate::errln!("request sizes the card saw: {}", sizes.join(", "));
    }
    if s.late > 0 {
        crate::errln!(
            "{} answers came later than the model said (the host could not keep up at this time scale)",
            s.late
        );
    }
    crate::errln!("detached {device} and unmounted the card's FUSE filesystem");
    Ok(())
}
