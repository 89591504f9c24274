//! ftrace's way in: the `blk` tracer (`kernel/trace/blktrace.c`, "blk"
//! tracer) with its `bin` option writes each event as a `blk_io_trace`
//! record to each CPU's `per_cpu/cpuN/trace_pipe`; the device's
//! `trace/enable` in sysfs turns its events on. The tracer is the whole
//! machine's, so a capture takes it only when it is `nop` (no one else's
//! trace is running), and puts back every setting it changed: at its end,
//! or, after a SIGKILL, at the next capture's start, from its record.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{CaptureError, TRACEFS, mount_if_missing, per_cpu};

fn tracefs(name: &str) -> PathBuf {
    Path::new(TRACEFS).join(name)
}

fn read(path: &Path) -> std::io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_string())
}

fn write(path: &Path, value: &str) -> Result<(), CaptureError> {
    std::fs::write(path, value).map_err(|e| CaptureError::Setup {
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

/// Where a capture records what it is about to change, so that the next
/// one puts it back after a SIGKILL (which no drop survives): the tracer
/// is the whole machine's, so there is one record.
fn record_path() -> PathBuf {
    let run = Path::new("/run");
    match run.is_dir() {
        true => run.join("flashlab-trace.json"),
        false => std::env::temp_dir().join("flashlab-trace.json"),
    }
}

/// What a capture changes: the device's `trace/enable` and the options
/// with the values they had; the tracer itself goes back to `nop`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Record {
    pid: u32,
    enable: PathBuf,
    options: Vec<(PathBuf, String)>,
}

impl Record {
    /// Put back what the record says was changed, and remove it.
    fn put_back(&self) {
        for (path, was) in self.options.iter().rev() {
            let _ = std::fs::write(path, was);
        }
        let _ = std::fs::write(tracefs("current_tracer"), "nop");
        let _ = std::fs::write(&self.enable, "0");
        let _ = std::fs::remove_file(record_path());
    }
}

/// The record of a capture whose process is gone (killed), if the tracer
/// was left as it set it. A live process's, or one that cannot be read,
/// is none: the tracer is then someone's, and busy.
fn left_by_the_dead() -> Option<Record> {
    let text = std::fs::read_to_string(record_path()).ok()?;
    let r: Record = serde_json::from_str(&text).ok()?;
    let alive = Path::new("/proc").join(r.pid.to_string()).exists();
    (!alive).then_some(r)
}

/// What a capture changed, to put back.
pub(super) struct Ftrace {
    /// `/sys/class/block/NAME/trace/enable`, once set.
    enable: Option<PathBuf>,
    tracer_set: bool,
    /// Options changed, with the value each had.
    options: Vec<(PathBuf, String)>,
    mounted: bool,
    /// The record of what it changes is written ([`record_path`]).
    recorded: bool,
}

impl Ftrace {
    /// Take the tracer for the device `name`; each CPU's trace_pipe.
    pub(super) fn start(name: &str) -> Result<(Ftrace, Vec<(u32, File)>), CaptureError> {
        let mounted = mount_if_missing("tracefs", TRACEFS, "current_tracer").map_err(|e| CaptureError::Setup {
            path: TRACEFS.into(),
            why: format!("mounting tracefs: {e}"),
        })?;
        // From here the drop puts back what was changed, on every path.
        let mut f = Ftrace {
            enable: None,
            tracer_set: false,
            options: Vec::new(),
            mounted,
            recorded: false,
        };
        let current = read(&tracefs("current_tracer")).map_err(|e| CaptureError::Setup {
            path: TRACEFS.into(),
            why: e.to_string(),
        })?;
        // Only a tracer as a capture leaves it is put back: another
        // tracer is someone else's trace.
        if matches!(current.as_str(), "blk" | "nop")
            && let Some(left) = left_by_the_dead()
        {
            left.put_back();
            crate::errln!(
                "note: put the kernel's tracer back after a flashlab trace that was killed (pid {})",
                left.pid
            );
        } else if current != "nop" {
            return Err(CaptureError::Busy(current));
        }
        let enable = Path::new("/sys/class/block").join(name).join("trace/enable");
        // The binary records take their time from the trace clock, which
        // is each CPU's own by default ("local"): requests dispatched on two
        // CPUs then merged out of order (a replay of mkfs and a copy gave
        // 28% more flash writes than the card counted). "mono" is one
        // clock for all.
        let changes = [
            ("options/bin", "1"),
            ("options/context-info", "0"),
            ("trace_clock", "mono"),
        ];
        let mut record = Record {
            pid: std::process::id(),
            enable: enable.clone(),
            options: Vec::new(),
        };
        for (option, _) in changes {
            let path = tracefs(option);
            let was = read(&path).map_err(|e| CaptureError::Setup {
                path: path.display().to_string(),
                why: e.to_string(),
            })?;
            // `trace_clock` lists every clock, the current one in brackets.
            let was = match (was.find('['), was.find(']')) {
                (Some(a), Some(b)) if a < b => was[a + 1..b].to_string(),
                _ => was,
            };
            record.options.push((path, was));
        }
        let text = serde_json::to_string(&record).unwrap_or_default();
        std::fs::write(record_path(), text).map_err(|e| CaptureError::Setup {
            path: record_path().display().to_string(),
            why: format!("recording what the capture changes: {e}"),
        })?;
        f.recorded = true;
        write(&enable, "1")?;
        f.enable = Some(enable);
        write(&tracefs("current_tracer"), "blk")?;
        f.tracer_set = true;
        for ((path, was), (_, value)) in record.options.into_iter().zip(changes) {
            write(&path, value)?;
            f.options.push((path, was));
        }
        // Opening `trace` for writing empties the buffer.
        write(&tracefs("trace"), "")?;
        let per_cpu_dir = tracefs("per_cpu");
        let pipes = per_cpu(&per_cpu_dir, "cpu", |cpu| {
            per_cpu_dir.join(format!("cpu{cpu}/trace_pipe"))
        })
        .map_err(|(_, e)| CaptureError::Read(e))?;
        Ok((f, pipes))
    }
}

impl Drop for Ftrace {
    /// Every trace_pipe is closed by now ([`super::Tracing`] closes them
    /// first): the tracer cannot change while one is open.
    fn drop(&mut self) {
        for (path, was) in self.options.drain(..).rev() {
            let _ = std::fs::write(path, was);
        }
        if self.tracer_set {
            let _ = std::fs::write(tracefs("current_tracer"), "nop");
        }
        if let Some(enable) = self.enable.take() {
            let _ = std::fs::write(enable, "0");
        }
        if self.recorded {
            let _ = std::fs::remove_file(record_path());
        }
        if self.mounted {
            let _ = rustix::mount::unmount(TRACEFS, rustix::mount::UnmountFlags::empty());
        }
    }
}
