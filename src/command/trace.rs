//! `flashlab trace DEVICE -o PREFIX`: record the block I/O a device
//! receives, in blktrace's binary format (`PREFIX.blktrace.CPU`), for
//! `--for DURATION` or until Ctrl-C, with live counts. Read-only: the
//! device is opened only to ask the kernel to trace it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::document::bodies::{Body, Captured};
use crate::document::{CommandName, RunDocument};
use crate::error::{CliError, CliResult};
use crate::import::trace::{Counts, Tally};
use crate::runner::progress::{Display, Progress};
use crate::targets::real::blktrace::{CaptureError, Tracing};

/// How often the kernel's buffers are copied out: blktrace's relay
/// buffers (4 of 512 KiB a CPU) hold about 40,000 records, more than a
/// card completes in this long.
const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// Without a terminal, a line of counts this often (a log, not a wall).
const LINE_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct Options {
    pub device: PathBuf,
    pub duration_ns: Option<u64>,
    pub prefix: PathBuf,
}

impl From<CaptureError> for CliError {
    fn from(e: CaptureError) -> Self {
        let hint = e.hint();
        match e {
            CaptureError::Read(_) => CliError::failed(e.to_string()).hint(hint),
            CaptureError::Open { .. }
            | CaptureError::NotBlock(_)
            | CaptureError::Setup { .. }
            | CaptureError::Busy(_)
            | CaptureError::Output { .. } => CliError::usage(e.to_string()).hint(hint),
        }
    }
}

fn counts(t: &[Tally]) -> Counts {
    let mut all = Counts::default();
    for one in t {
        all += one.counts;
    }
    all
}

/// Whether the files go to a filesystem on the traced device: then the
/// capture's own writes are in it (blktrace has the same loop).
fn on_the_device(prefix: &Path, device: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let dir = prefix
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (Ok(d), Ok(dev)) = (std::fs::metadata(dir), std::fs::metadata(device)) else {
        return false;
    };
    let (fs_major, fs_minor) = (rustix::fs::major(d.dev()), rustix::fs::minor(d.dev()));
    let (major, minor) = (rustix::fs::major(dev.rdev()), rustix::fs::minor(dev.rdev()));
    if (fs_major, fs_minor) == (major, minor) {
        return true;
    }
    // A partition of the traced disk: its sysfs path runs through the disk's.
    let link = |ma: u32, mi: u32| std::fs::canonicalize(format!("/sys/dev/block/{ma}:{mi}")).ok();
    matches!((link(fs_major, fs_minor), link(major, minor)), (Some(fs), Some(disk)) if fs.starts_with(&disk))
}

pub fn run(o: &Options) -> CliResult<RunDocument> {
    crate::safety::signals::install();
    let mut doc = RunDocument::new(CommandName::Trace, None);
    if on_the_device(&o.prefix, &o.device) {
        doc.warnings.push(crate::document::Note {
            kind: crate::document::NoteKind::Capture,
            message: format!(
                "{} is on the traced device: the capture's own writes are in it",
                o.prefix.display()
            ),
            hint: Some("write it to another disk or a tmpfs (/dev/shm)".into()),
        });
    }
    let mut tracing = Tracing::start(&o.device, &o.prefix)?;
    let how = tracing.how();
    let mut tallies = vec![Tally::default(); tracing.outputs.len()];
    let progress = Progress::start(&Display::default(), &format!("tracing {}", o.device.display()), None);
    let started = Instant::now();
    let until = o.duration_ns.map(Duration::from_nanos);
    let mut last_line = Instant::now();
    let stopped_by = loop {
        if let Some(sig) = crate::safety::signals::pending() {
            break crate::safety::signals::name(sig).to_string();
        }
        if until.is_some_and(|u| started.elapsed() >= u) {
            break "--for".to_string();
        }
        std::thread::sleep(DRAIN_EVERY);
        tracing.drain(|cpu, bytes| tallies[cpu].feed(bytes))?;
        let now = counts(&tallies);
        progress.say(&now.to_string());
        if let Some(u) = until {
            crate::measure::Progress::advance(&progress, started.elapsed().as_millis() as u64, u.as_millis() as u64);
        }
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) && last_line.elapsed() >= LINE_EVERY {
            crate::errln!(
                "tracing {}: {:.0} s, {}",
                o.device.display(),
                started.elapsed().as_secs_f64(),
                now
            );
            last_line = Instant::now();
        }
    };
    let outputs = tracing.outputs.clone();
    let bytes = tracing.stop(|cpu, bytes| tallies[cpu].feed(bytes))?;
    progress.clear();
    crate::safety::signals::clear();
    doc.body = Body::Traced(Captured {
        device: o.device.display().to_string(),
        how: how.to_string(),
        seconds: started.elapsed().as_secs_f64(),
        stopped_by,
        files: outputs.iter().map(|p| p.display().to_string()).collect(),
        bytes,
        counts: counts(&tallies),
    });
    doc.finish(None);
    Ok(doc)
}
