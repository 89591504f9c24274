//! ftrace's way in: the `blk` tracer (`kernel/trace/blktrace.c`, "blk"
//! tracer) with its `bin` option writes each event as a `blk_io_trace`
//! record to each CPU's `per_cpu/cpuN/trace_pipe`; the device's
//! `trace/enable` in sysfs turns its events on. The tracer is the whole
//! machine's, so a capture takes it only when it is `nop` (no one else's
//! trace is running), and puts back every setting it changed.

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

/// What a capture changed, to put back.
pub(super) struct Ftrace {
    /// `/sys/class/block/NAME/trace/enable`, once set.
    enable: Option<PathBuf>,
    tracer_set: bool,
    /// Options changed, with the value each had.
    options: Vec<(PathBuf, String)>,
    mounted: bool,
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
        };
        let current = read(&tracefs("current_tracer")).map_err(|e| CaptureError::Setup {
            path: TRACEFS.into(),
            why: e.to_string(),
        })?;
        if current != "nop" {
            return Err(CaptureError::Busy(current));
        }
        let enable = Path::new("/sys/class/block").join(name).join("trace/enable");
        write(&enable, "1")?;
        f.enable = Some(enable);
        write(&tracefs("current_tracer"), "blk")?;
        f.tracer_set = true;
        // The binary records take their time from the trace clock, which
        // is each CPU's own by default ("local"): requests dispatched on two
        // CPUs then merged out of order (a replay of mkfs and a copy gave
        // 28% more flash writes than the card counted). "mono" is one
        // clock for all.
        for (option, value) in [
            ("options/bin", "1"),
            ("options/context-info", "0"),
            ("trace_clock", "mono"),
        ] {
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
        if self.mounted {
            let _ = rustix::mount::unmount(TRACEFS, rustix::mount::UnmountFlags::empty());
        }
    }
}
