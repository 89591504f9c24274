//! `flashlab emulate`: a simulated card as a real Linux block device, in real
//! time, so any program (dd, fio, f3probe, mkfs, a filesystem, flashlab's own
//! real-device path) runs against a card whose truth is known.
//!
//! This kernel has /dev/fuse and loop but no ublk, nbd or device-mapper, so
//! the card is one file in a FUSE filesystem (fuser, mounted directly as
//! root), with a loop device in direct-I/O mode over it. What that path
//! does to requests was measured first (`../shared/notes/fuse-loop-path.md`).
//! Each request is answered when the card model says the card completes it
//! ([`crate::sim::SimTarget::serve_at`]), on a wall clock scaled by
//! `--time-scale`; the serving overhead, measured at start, is taken off.
//!
//! What an emulation leaves while it runs is recorded in a state file
//! ([`stale`]), so one killed with SIGKILL is cleaned up by the next.

mod fs;
pub mod stale;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use fs::Stats;
use serde::Serialize;

use crate::sim::SimTarget;
use crate::target::Target;

/// Why an emulation cannot start or stopped: what happened and what to do.
#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    /// Refused before anything was made (exit 2).
    #[error("{why}")]
    Refused { why: String, fix: String },
    /// Failed while serving or cleaning up (exit 1).
    #[error("{why}")]
    Failed { why: String, fix: String },
}

fn refused(why: impl Into<String>, fix: impl Into<String>) -> EmulateError {
    EmulateError::Refused {
        why: why.into(),
        fix: fix.into(),
    }
}

fn failed(why: impl Into<String>, fix: impl Into<String>) -> EmulateError {
    EmulateError::Failed {
        why: why.into(),
        fix: fix.into(),
    }
}

/// Slowest and fastest clocks accepted: a thousand times slower or faster
/// than the card.
pub const SCALE_RANGE: (f64, f64) = (0.001, 1000.0);
/// Reads timed through the whole path to measure its overhead.
const CALIBRATION_READS: usize = 200;

pub struct Options {
    pub spec: String,
    pub time_scale: f64,
    pub backing: Option<PathBuf>,
}

/// What `emulate` reports when the device is ready.
#[derive(Debug, Clone, Serialize)]
pub struct Ready {
    pub device: String,
    pub spec: String,
    pub size_bytes: u64,
    pub sector_size: u32,
    pub au_size_bytes: u64,
    pub page_size_bytes: u64,
    pub open_aus_linear: u64,
    pub open_aus_random: u64,
    pub fat_area_aus: u64,
    pub time_scale: f64,
    /// The serving overhead measured and taken off each answer, µs.
    pub overhead_us: f64,
    pub mountpoint: String,
    pub backing: Option<String>,
}

/// What the card saw, at the end.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub flushes: u64,
    /// Request sizes the card saw, bytes -> count.
    pub sizes: std::collections::BTreeMap<u32, u64>,
    pub most_in_flight: u64,
    pub late: u64,
    pub refused: u64,
    pub gc_events: u64,
    pub device_s: f64,
    pub wall_s: f64,
}

/// A running emulation: dropping it detaches the loop device and unmounts.
pub struct Emulation {
    card: Arc<fs::Card>,
    pub ready: Ready,
    session: Option<fuser::BackgroundSession>,
    state: stale::State,
    started: Instant,
}

/// Refusals that need nothing made yet: root, /dev/fuse, losetup.
pub fn preflight() -> Result<(), EmulateError> {
    if !rustix::process::geteuid().is_root() {
        return Err(refused(
            "emulate needs root: it mounts a FUSE filesystem and attaches a loop device",
            "run it with sudo",
        ));
    }
    if !Path::new("/dev/fuse").exists() {
        return Err(refused(
            "there is no /dev/fuse on this machine",
            "load the fuse module (modprobe fuse) or run where FUSE is available",
        ));
    }
    if helper("losetup").is_none() {
        return Err(refused(
            "the losetup program is missing",
            "install util-linux (apt-get install util-linux)",
        ));
    }
    Ok(())
}

/// The path of a helper program on PATH.
fn helper(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Serve the card `o.spec` until [`Emulation::stop`].
pub fn start(o: &Options) -> Result<Emulation, EmulateError> {
    preflight()?;
    let mut sim = SimTarget::from_spec(&o.spec).map_err(|e| refused(e, "`flashlab sim list` names the profiles"))?;
    let backing = match &o.backing {
        Some(p) => Some(open_backing(p, &sim)?),
        None => None,
    };
    // The card keeps its data in memory unless a backing file does.
    sim.params.keep_data = backing.is_none();
    let d = sim.description().clone();
    let p = sim.params.clone();
    let cleaned = stale::clean_stale();
    for line in &cleaned {
        crate::errln!("cleaned up after an emulation that was killed: {line}");
    }
    let state = stale::State::create(&o.spec, o.time_scale)?;
    let card = Arc::new(fs::Card::new(sim, backing, o.time_scale));
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName(crate::identify::emulated::FS_NAME.into()),
        fuser::MountOption::Subtype("flashlab".into()),
        fuser::MountOption::NoDev,
        fuser::MountOption::NoSuid,
        fuser::MountOption::NoExec,
    ];
    // A thread per request in flight: each waits for its own answer.
    config.n_threads = Some(usize::from(fs::MAX_BACKGROUND));
    config.clone_fd = true;
    let session = fuser::spawn_mount(fs::CardFs(card.clone()), &state.mountpoint, &config).map_err(|e| {
        state.remove();
        failed(
            format!(
                "cannot mount the card's FUSE filesystem at {}: {e}",
                state.mountpoint.display()
            ),
            "check that /dev/fuse works (modprobe fuse) and that nothing else uses the mount point",
        )
    })?;
    let mut em = Emulation {
        card,
        ready: Ready {
            device: String::new(),
            spec: o.spec.clone(),
            size_bytes: d.size_bytes,
            sector_size: d.logical_block_size,
            au_size_bytes: p.au_size,
            page_size_bytes: p.page_size,
            open_aus_linear: p.open_aus_linear,
            open_aus_random: p.open_aus_random,
            fat_area_aus: p.fat_area_aus,
            time_scale: o.time_scale,
            overhead_us: 0.0,
            mountpoint: state.mountpoint.display().to_string(),
            backing: o.backing.as_ref().map(|b| b.display().to_string()),
        },
        session: Some(session),
        state,
        started: Instant::now(),
    };
    let file = em.state.mountpoint.join(fs::CARD_FILE);
    let dev = attach(&file, d.logical_block_size)?;
    em.state.record_loop(&dev)?;
    em.ready.device = dev.clone();
    let overhead = calibrate(&dev, d.logical_block_size)?;
    em.card.set_overhead(overhead);
    em.ready.overhead_us = overhead as f64 / 1e3;
    em.started = Instant::now();
    Ok(em)
}

/// The backing file: a regular file (made if missing) of the card's size.
fn open_backing(p: &Path, sim: &SimTarget) -> Result<File, EmulateError> {
    let size = sim.description().size_bytes;
    if sim.params.real_capacity.is_some() || sim.params.write_cache > 0 {
        return Err(refused(
            "--backing keeps a genuine card's bytes; a fake card's lost writes are modelled in memory only",
            "leave out --backing, or emulate a genuine profile",
        ));
    }
    if let Ok(m) = std::fs::symlink_metadata(p)
        && !m.file_type().is_file()
    {
        return Err(refused(
            format!("--backing {} exists and is not a regular file", p.display()),
            "give a regular file (it is made if missing)",
        ));
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p)
        .map_err(|e| refused(format!("cannot open --backing {}: {e}", p.display()), "check the path"))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len != 0 && len != size {
        return Err(refused(
            format!("--backing {} holds {len} bytes, the card has {size}", p.display()),
            "give the file of the same card (same profile and capacity), or a new one",
        ));
    }
    if len == 0 {
        f.set_len(size).map_err(|e| {
            refused(
                format!("cannot size --backing {}: {e}", p.display()),
                "check the filesystem's space",
            )
        })?;
    }
    Ok(f)
}

/// `losetup --find --show --direct-io=on --sector-size N FILE`: the device.
fn attach(file: &Path, sector: u32) -> Result<String, EmulateError> {
    let out = Command::new("losetup")
        .args(["--find", "--show", "--direct-io=on", "--sector-size"])
        .arg(sector.to_string())
        .arg(file)
        .output()
        .map_err(|e| failed(format!("cannot run losetup: {e}"), "install util-linux"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(refused(
            format!("no loop device could be attached: {}", err.trim()),
            "free a loop device (losetup -D detaches unused ones) or load the loop module (modprobe loop)",
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The overhead of the path (loop, FUSE, this daemon) at queue depth 1:
/// the median of [`CALIBRATION_READS`] direct reads answered at once.
fn calibrate(dev: &str, sector: u32) -> Result<u64, EmulateError> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .map_err(|e| failed(format!("cannot open {dev}: {e}"), "check the loop device"))?;
    let len = sector.max(4096) as usize;
    let mut buf = crate::target::AlignedBuf::new(len);
    let mut times: Vec<u64> = Vec::with_capacity(CALIBRATION_READS);
    for _ in 0..CALIBRATION_READS {
        let t0 = Instant::now();
        f.read_exact_at(buf.as_mut_slice(), 0)
            .map_err(|e| failed(format!("cannot read {dev}: {e}"), "check the loop device"))?;
        times.push(t0.elapsed().as_nanos() as u64);
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

impl Emulation {
    /// One line of live counters.
    pub fn counters(&self, since: &Stats, secs: f64) -> (String, Stats) {
        let now = self.card.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (gc, open, _) = self.card.model();
        let moved = (now.bytes_read + now.bytes_written).saturating_sub(since.bytes_read + since.bytes_written);
        let line = format!(
            "{} requests ({} reads, {} writes), {:.1} MB/s, {gc} merges, {open} AUs open",
            now.reads + now.writes,
            now.reads,
            now.writes,
            moved as f64 / secs.max(1e-9) / 1e6,
        );
        (line, now)
    }

    /// What the card saw so far.
    pub fn summary(&self) -> Summary {
        let s = self.card.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (gc, _, device_ns) = self.card.model();
        Summary {
            reads: s.reads,
            writes: s.writes,
            bytes_read: s.bytes_read,
            bytes_written: s.bytes_written,
            flushes: s.flushes,
            sizes: s.sizes,
            most_in_flight: s.most_in_flight,
            late: s.late,
            refused: s.refused,
            gc_events: gc,
            device_s: device_ns as f64 / 1e9,
            wall_s: self.started.elapsed().as_secs_f64(),
        }
    }

    /// Detach the loop device, unmount, remove the state: only what this
    /// emulation made.
    pub fn stop(mut self) -> Result<Summary, EmulateError> {
        let summary = self.summary();
        self.teardown()?;
        Ok(summary)
    }

    fn teardown(&mut self) -> Result<(), EmulateError> {
        let mut problems = Vec::new();
        if !self.ready.device.is_empty() {
            if let Err(e) = stale::detach(&self.ready.device) {
                problems.push(e);
            }
            self.ready.device.clear();
        }
        // Dropping the session unmounts the filesystem.
        drop(self.session.take());
        if let Err(e) = stale::unmount(&self.state.mountpoint) {
            problems.push(e);
        }
        self.state.remove();
        match problems.is_empty() {
            true => Ok(()),
            false => Err(failed(
                problems.join("; "),
                "run `flashlab emulate --cleanup` to finish the cleanup",
            )),
        }
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        if self.session.is_some() {
            let _ = self.teardown();
        }
    }
}

/// Whether something holds `dev` open exclusively (a mounted filesystem):
/// an exclusive open of our own then fails with EBUSY.
fn in_use(dev: &str) -> bool {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(dev)
        .is_err_and(|e| e.raw_os_error() == Some(libc::EBUSY))
}

/// Wait, printing counters every `every`, until SIGINT or SIGTERM. While
/// the device is mounted, the first signal only warns: stopping would fail
/// the filesystem's I/O under it; a second one stops anyway.
pub fn run_until_signal(em: &Emulation, every: Duration) -> i32 {
    let mut last = Stats::default();
    let mut tick = Instant::now();
    let mut warned = false;
    loop {
        if let Some(sig) = crate::safety::signals::pending() {
            if warned || !in_use(&em.ready.device) {
                return sig;
            }
            let line = format!(
                "{} is still in use (mounted?): unmount it first, or send the signal again to stop anyway (its \
                 I/O then fails)",
                em.ready.device
            );
            crate::errln!("{}", crate::console::wrap(&line, "", "  "));
            warned = true;
            crate::safety::signals::clear();
        }
        std::thread::sleep(Duration::from_millis(50));
        if tick.elapsed() >= every {
            let (line, now) = em.counters(&last, tick.elapsed().as_secs_f64());
            if now.reads + now.writes != last.reads + last.writes {
                crate::errln!("{line}");
            }
            last = now;
            tick = Instant::now();
        }
    }
}
