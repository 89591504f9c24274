//! `flashlab emulate`: a simulated card as a real Linux block device, in real
//! time, so any program (dd, fio, f3probe, mkfs, a filesystem, flashlab's own
//! real-device path) runs against a card whose truth is known.
//!
//! This kernel has /dev/fuse and loop but no ublk, nbd or device-mapper, so
//! the card is one file in a FUSE filesystem (fuser, mounted directly as
//! root), with a loop device in direct-I/O mode over it. What that path
//! does to requests was measured first (`docs/notes/fuse-loop-path.md`).
//! Each request is answered when the card model says the card completes it
//! ([`crate::sim::SimTarget::serve_at`]), on a wall clock scaled by
//! `--time-scale`; the serving overhead, measured at start, is taken off.
//!
//! What an emulation leaves while it runs is recorded in a state file
//! ([`stale`]), so one killed with SIGKILL is cleaned up by the next.

mod files;
mod fs;
mod medium;
mod order;
pub mod stale;
mod timing;

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use fs::Stats;
use serde::{Deserialize, Serialize};

use crate::sim::SimTarget;
use crate::targets::Target;

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

/// The least wall time the card's quickest small read may take for small
/// reads (align's 2-8 KiB rows, scatter) to keep within 15% of the model:
/// under it the loop and FUSE path's own noise, 10-20 µs a request, is
/// more than 15% of the card's time (`scripts/emulate-vs-model.sh scale`;
/// the figures are in the README).
pub const FAITHFUL_READ_NS: u64 = 120_000;

/// The card's quickest small read in its own time (ns): a 4 KiB read
/// right after another, on a fresh copy of the model. Small-read timing is
/// faithful from time scale [`FAITHFUL_READ_NS`] / this.
fn quickest_read_ns(params: &crate::sim::params::Params) -> u64 {
    let mut sim = SimTarget::new(
        "quickest read",
        crate::sim::params::Params {
            keep_data: false,
            ..params.clone()
        },
    );
    let len = sim.description().logical_block_size.max(4096);
    let reqs = [
        crate::targets::Request::read(0, len, 0),
        crate::targets::Request::read(u64::from(len), len, 0),
    ];
    let mut buf = crate::targets::AlignedBuf::new(len as usize);
    sim.run(&reqs, 1, &mut buf)
        .ok()
        .and_then(|c| c.iter().map(|c| c.duration_ns).min())
        .unwrap_or(0)
}

/// The warning, and its hint, for a time scale at which the card's small
/// reads are not faithful.
pub fn scale_warning(r: &Ready) -> Option<(String, String)> {
    (r.time_scale < r.faithful_scale).then(|| {
        let t = |us: f64| crate::units::duration_ns(us * 1e3);
        (
            format!(
                "time scale {} is under {}, the smallest at which this card's small reads keep within 15% of its \
                 model: its quickest (a 4 KiB read, {} on the card) takes {} here, and the loop and FUSE path's own \
                 noise outweighs 15% of that, so small-read timing (align's page steps, scatter) shows the path, \
                 not the card",
                r.time_scale,
                r.faithful_scale,
                t(r.quickest_read_us),
                t(r.quickest_read_us * r.time_scale)
            ),
            format!(
                "use --time-scale {} or more where small-read timing matters",
                r.faithful_scale
            ),
        )
    })
}

/// The smallest time scale at which reads of `quickest_ns` take
/// [`FAITHFUL_READ_NS`], rounded up to two significant digits.
fn faithful_scale(quickest_ns: u64) -> f64 {
    if quickest_ns == 0 {
        return SCALE_RANGE.0;
    }
    let x = FAITHFUL_READ_NS as f64 / quickest_ns as f64;
    let unit = 10f64.powf(x.log10().floor() - 1.0);
    ((x / unit - 1e-9).ceil() * unit).clamp(SCALE_RANGE.0, SCALE_RANGE.1)
}

pub struct Options {
    /// The card as named (`sim:PROFILE[,key=value...]`) and resolved.
    pub spec: String,
    pub params: crate::sim::params::Params,
    pub time_scale: f64,
    pub backing: Option<PathBuf>,
    /// Where each request is written in the order the card took it.
    pub record: Option<PathBuf>,
    /// Where emulations record themselves (`Places::emulations`).
    pub dir: PathBuf,
}

/// What `emulate` reports when the device is ready.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// The largest request the loop device passes on (it splits larger
    /// ones), bytes.
    pub max_request_bytes: u64,
    /// The card's quickest small read in its own time, µs, and the
    /// smallest time scale at which small reads are faithful.
    pub quickest_read_us: f64,
    pub faithful_scale: f64,
    pub mountpoint: String,
    pub backing: Option<String>,
    /// `--record`'s file (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
}

/// What the card saw, at the end.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub flushes: u64,
    /// Discards the card took, and their bytes (older summaries lack them).
    #[serde(default)]
    pub discards: u64,
    #[serde(default)]
    pub bytes_discarded: u64,
    /// Request sizes the card saw, bytes -> count.
    pub sizes: std::collections::BTreeMap<u32, u64>,
    pub most_in_flight: u64,
    /// Answers the card model gave, and those that left late
    /// ([`fs::is_late`]): a mean and the most, ns past their moment.
    pub answers: u64,
    pub late: u64,
    pub late_mean_ns: u64,
    pub late_max_ns: u64,
    /// Requests that came while none was in flight, and the mean of how
    /// much later than the path's own round trip they came after the
    /// previous answer (ns).
    pub idle_arrivals: u64,
    pub idle_wait_mean_ns: u64,
    /// The card's mean time for those requests (wall ns).
    pub idle_card_mean_ns: u64,
    pub refused: u64,
    /// Requests the card took after a later one ([`order::Order::overtaken`]).
    pub overtaken: u64,
    pub gc_events: u64,
    /// The card's flash work, by cause (the same counts a simulated run's
    /// document carries).
    pub flash_work: crate::sim::ftl::FlashReport,
    pub device_s: f64,
    pub wall_s: f64,
    /// Requests written to `--record`'s file (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<u64>,
}

/// A running emulation: dropping it detaches the loop device and unmounts.
pub struct Emulation {
    card: Arc<fs::Card>,
    pub ready: Ready,
    session: Option<fuser::BackgroundSession>,
    state: stale::State,
    started: Instant,
    /// The loop device's request limit before this emulation set it, in
    /// KiB, put back at teardown: a loop device keeps the limit across
    /// detach and attach, so the next user would inherit ours.
    limit_before_kb: Option<u64>,
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
    // Found as every later call finds it (std looks it up on PATH): a
    // program that will not start is missing, whatever it printed.
    let found = Command::new("losetup")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok();
    if !found {
        return Err(refused(
            "the losetup program is missing",
            "install util-linux (apt-get install util-linux)",
        ));
    }
    Ok(())
}

/// Serve the card `o.spec` until [`Emulation::stop`].
pub fn start(o: &Options) -> Result<Emulation, EmulateError> {
    preflight()?;
    let mut sim = SimTarget::new(&o.spec, o.params.clone());
    if let Some(r) = &o.record {
        files::Recorder::check(r, o.backing.as_deref())?;
    }
    let backing = match &o.backing {
        Some(p) => Some(files::open_backing(p, &sim)?),
        None => None,
    };
    let backing_id = backing.as_ref().and_then(files::file_id);
    // The card keeps its data in memory unless a backing file does.
    sim.params.keep_data = backing.is_none();
    let d = sim.description().clone();
    let p = sim.params.clone();
    let quickest = quickest_read_ns(&o.params);
    let cleaned = stale::clean_stale(&o.dir);
    for line in &cleaned {
        crate::errln!("cleaned up after an emulation that was killed: {line}");
    }
    let state = stale::State::create(&o.dir, &o.spec, o.time_scale)?;
    // The FUSE threads inherit this thread's class and timer slack
    // (`timing`: a real-time thread answers on time beside a build).
    timing::fine_timer_slack();
    let realtime = timing::realtime(true);
    if let Err(e) = &realtime {
        crate::errln!(
            "note: the answering threads run at normal priority ({e}): with other work on this machine their \
             answers come late, and the summary counts them"
        );
    }
    let card = Arc::new(fs::Card::new(sim, backing, o.time_scale, timing::Waiter::measure()));
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
    let session = fuser::spawn_mount(fs::CardFs(card.clone()), &state.mountpoint, &config);
    let _ = timing::realtime(false);
    let session = session.map_err(|e| {
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
            max_request_bytes: 0,
            quickest_read_us: quickest as f64 / 1e3,
            faithful_scale: faithful_scale(quickest),
            mountpoint: state.mountpoint.display().to_string(),
            backing: o.backing.as_ref().map(|b| b.display().to_string()),
            record: o.record.as_ref().map(|r| r.display().to_string()),
        },
        session: Some(session),
        limit_before_kb: None,
        state,
        started: Instant::now(),
    };
    let file = em.state.mountpoint.join(fs::CARD_FILE);
    let dev = attach(&file, d.logical_block_size)?;
    em.state.record_loop(&dev)?;
    em.ready.device = dev.clone();
    let (passed, before_kb) = limit_requests(&dev, p.max_blocks_per_cmd * u64::from(d.logical_block_size));
    em.ready.max_request_bytes = passed;
    em.limit_before_kb = before_kb;
    let sizes: Vec<u32> = timing::CALIBRATED_SIZES
        .iter()
        .map(|&s| s.max(d.logical_block_size))
        .collect();
    // Timed from a real-time thread too: the path's own overhead, not this
    // thread's wait for a CPU on a busy machine.
    let rt = realtime.is_ok() && timing::realtime(true).is_ok();
    let overhead = timing::calibrate(&dev, &sizes, em.card.calibration());
    if rt {
        let _ = timing::realtime(false);
    }
    let overhead = overhead.map_err(|e| failed(format!("cannot calibrate {dev}: {e}"), "check the loop device"))?;
    em.ready.overhead_us = overhead.at(crate::targets::Op::Read, 4096) as f64 / 1e3;
    em.card.serve_model(overhead);
    // Made once the card serves the model, so that a start that fails
    // leaves no file, and the calibration's requests are not in it.
    if let Some(r) = &o.record {
        em.card.record_to(files::Recorder::create(r, backing_id)?);
    }
    em.started = Instant::now();
    Ok(em)
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

/// The summary's lines about timing: answers that left late, and, where
/// requests came one at a time, how long programs took to send the next
/// beyond the path's own round trip, where that is worth saying. Empty when
/// neither is.
pub fn timing_lines(s: &Summary) -> Vec<String> {
    let t = |ns: u64| crate::units::duration_ns(ns as f64);
    let mut lines = Vec::new();
    if s.late > 0 {
        lines.push(format!(
            "{} of {} late (a mean {} past their moment, the latest {}): the machine did not keep up; \
             programs saw those waits on top of the card's time (a larger --time-scale or a quieter machine keeps \
             up)",
            s.late,
            crate::units::count(s.answers, "answer", "answers"),
            t(s.late_mean_ns),
            t(s.late_max_ns)
        ));
    }
    if s.overtaken > 0 {
        lines.push(format!(
            "{} reached the card after later ones (each waited past its turn): the machine did not keep \
             up, and the card took a sequential write's pieces out of order, as random writes; a quieter machine \
             keeps the kernel's order",
            if s.overtaken == 1 {
                "1 request".to_string()
            } else {
                format!("{} requests", s.overtaken)
            }
        ));
    }
    if s.idle_arrivals >= IDLE_ARRIVALS_SHOWN && s.idle_wait_mean_ns > IDLE_WAIT_SHOWN_NS.max(s.idle_card_mean_ns / 10)
    {
        lines.push(format!(
            "{} requests came while none was in flight, a mean {} later after the previous answer than the path \
             takes: a program that waits for each answer spent that in itself, or waiting for a CPU on a busy \
             machine, on top of the card's time",
            s.idle_arrivals,
            t(s.idle_wait_mean_ns)
        ));
    }
    lines
}

/// Requests one at a time before their waits are worth a line.
const IDLE_ARRIVALS_SHOWN: u64 = 100;
/// Waits are worth a line when longer than this and than a tenth of the
/// card's time for the requests. On an idle machine fio at QD 1 waited a
/// mean under 50 µs after 170 µs reads, and 60-212 µs after writes of
/// 3-196 ms (a thread woken after a long sleep comes back slower); with a
/// build beside it, 108 µs after the reads and 422 µs after 3.4 ms writes
/// (`scripts/emulate-vs-model.sh fio`, fio_wait).
const IDLE_WAIT_SHOWN_NS: u64 = 50_000;

/// Let the loop device `dev` pass on requests of up to `card_max` bytes
/// (the model's host's largest command), within what the loop queue can
/// take: then the kernel splits a program's large requests where the card's
/// host would, and the card sees whole pages. Left alone, the loop queue
/// split 1 MiB writes of fio at its 128-segment limit, where the buffer's
/// pages broke (52 + 972 KiB, 4 + 1020 KiB, 220 + ...), and
/// sim:kingston-sa04g, paying for the partial pages, took 1 MiB writes at
/// 2.2 of the model's 5.1 a second (`docs/notes/fuse-loop-path.md`,
/// "request splitting"). The limit is set whether it lowers or raises the
/// one found: a loop device keeps its limit across detach and attach, so an
/// earlier emulation of a host with 32 KiB commands left loop0 at 32 KiB,
/// and a later one that only lowered limits passed 32 KiB pieces to a card
/// whose host takes 512 KiB. Returns what the device passes on, read back,
/// and the limit found, in KiB, where it was changed.
pub fn limit_requests(dev: &str, card_max: u64) -> (u64, Option<u64>) {
    let Some(name) = Path::new(dev).file_name() else {
        return (0, None);
    };
    let queue = Path::new("/sys/block").join(name).join("queue");
    let kb_in = |leaf: &str| -> Option<u64> {
        std::fs::read_to_string(queue.join(leaf))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    let page_kb = rustix::param::page_size() as u64 >> 10;
    let want = (card_max >> 10)
        .max(page_kb)
        .min(kb_in("max_hw_sectors_kb").unwrap_or(u64::MAX));
    let before = kb_in("max_sectors_kb");
    let changed = match before {
        Some(kb) if kb != want => std::fs::write(queue.join("max_sectors_kb"), format!("{want}\n")).is_ok(),
        _ => false,
    };
    let passed = kb_in("max_sectors_kb").map_or(0, |kb| kb << 10);
    (passed, before.filter(|_| changed))
}

/// Put back the loop device's request limit found before the emulation.
pub fn restore_limit(dev: &str, kb: u64) -> Result<(), String> {
    let name = Path::new(dev).file_name().unwrap_or_default();
    let file = Path::new("/sys/block").join(name).join("queue/max_sectors_kb");
    std::fs::write(&file, format!("{kb}\n")).map_err(|e| format!("{}: {e}", file.display()))
}

/// The live counters at a moment, as `emulate` shows them while it serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Live {
    pub reads: u64,
    pub writes: u64,
    /// Bytes read and written so far, for the rate between two moments.
    pub bytes: u64,
    pub merges: u64,
    /// Open AUs written in order, and taking random writes.
    pub open_in_order: u64,
    pub open_random: u64,
}

impl Live {
    /// Whether anything the line counts changed since `before` (the rate
    /// follows the requests).
    pub fn changed(&self, before: &Live) -> bool {
        Live { bytes: 0, ..*self } != Live { bytes: 0, ..*before }
    }

    /// One line: the requests, the rate since `before` (`secs` ago), the
    /// merges, and the open AUs of each kind against how many the card
    /// keeps (`kept`: in order, random; "AUs 3/3 in order, 2/3 random"):
    /// "5 AUs open" had said neither which kind nor of how many. Short
    /// enough for a spinner beside it at 80 columns with a card's usual
    /// 6 and 24: counts past 9999 are shortened ("40127 reads" had pushed
    /// "random" off the line); a terminal narrower than the line cuts its
    /// end.
    pub fn line(&self, before: &Live, secs: f64, kept: (u64, u64)) -> String {
        use crate::units::count_short as count;
        format!(
            "{}, {}, {:.1} MB/s, {}; AUs {}/{} in order, {}/{} random",
            count(self.reads, "read", "reads"),
            count(self.writes, "write", "writes"),
            self.bytes.saturating_sub(before.bytes) as f64 / secs.max(1e-9) / 1e6,
            count(self.merges, "merge", "merges"),
            self.open_in_order,
            kept.0,
            self.open_random,
            kept.1
        )
    }
}

impl Emulation {
    /// The live counters now.
    pub fn live(&self) -> Live {
        let now = self.card.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (merges, (open_in_order, open_random), _) = self.card.model();
        Live {
            reads: now.reads,
            writes: now.writes,
            bytes: now.bytes_read + now.bytes_written,
            merges,
            open_in_order,
            open_random,
        }
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
            discards: s.discards,
            bytes_discarded: s.bytes_discarded,
            sizes: s.sizes,
            most_in_flight: s.most_in_flight,
            answers: s.answers,
            late: s.late,
            late_mean_ns: s.late_sum_ns.checked_div(s.late).unwrap_or(0),
            late_max_ns: s.late_max_ns,
            idle_arrivals: s.idle_arrivals,
            idle_wait_mean_ns: s.idle_wait_sum_ns.checked_div(s.idle_arrivals).unwrap_or(0),
            idle_card_mean_ns: s.idle_card_sum_ns.checked_div(s.idle_arrivals).unwrap_or(0),
            refused: s.refused,
            overtaken: self.card.order.overtaken(),
            gc_events: gc,
            flash_work: self.card.flash_report(),
            device_s: device_ns as f64 / 1e9,
            wall_s: self.started.elapsed().as_secs_f64(),
            recorded: None,
        }
    }

    /// Detach the loop device, unmount, remove the state: only what this
    /// emulation made.
    pub fn stop(mut self) -> Result<Summary, EmulateError> {
        let mut summary = self.summary();
        self.teardown()?;
        // Detached: no request can come, so the record is whole.
        summary.recorded = self.card.finish_record()?;
        Ok(summary)
    }

    fn teardown(&mut self) -> Result<(), EmulateError> {
        let mut problems = Vec::new();
        if !self.ready.device.is_empty() {
            if let Some(kb) = self.limit_before_kb.take()
                && let Err(e) = restore_limit(&self.ready.device, kb)
            {
                problems.push(e);
            }
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

/// Wait, giving `show` the live counters every `every` (with the seconds
/// since it last had them), until SIGINT or SIGTERM; pull the card out on
/// SIGUSR1 and put it back on SIGUSR2 ([`medium`]). While the device is
/// mounted, the first signal only warns: stopping would fail the
/// filesystem's I/O under it; a second one stops anyway.
pub fn run_until_signal(em: &Emulation, every: Duration, show: &mut dyn FnMut(&Live, f64)) -> i32 {
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
        if let Some(sig) = crate::safety::signals::take_medium() {
            let present = sig == libc::SIGUSR2;
            let line = match em.set_present(present) {
                Ok(()) if present => format!("{}: the card is back in its slot", em.ready.device),
                Ok(()) => format!(
                    "{}: the card is out of its slot (0 bytes, every request fails with \"no medium\"); SIGUSR2 \
                     puts it back",
                    em.ready.device
                ),
                Err(e) => format!("warning: {e}"),
            };
            crate::errln!("{}", crate::console::wrap(&line, "", "  "));
        }
        std::thread::sleep(Duration::from_millis(50));
        if tick.elapsed() >= every {
            show(&em.live(), tick.elapsed().as_secs_f64());
            tick = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_faithful_scale_gives_the_quickest_read_its_floor_rounded_up() {
        // sim:demo's 4 KiB read after another (120.7 µs) and
        // sim:kingston-sa04g's (531.5 µs).
        assert_eq!(faithful_scale(120_725), 1.0);
        assert_eq!(faithful_scale(531_497), 0.23);
        assert_eq!(faithful_scale(12_000_000), 0.01);
        assert_eq!(faithful_scale(0), SCALE_RANGE.0);
    }

    #[test]
    fn the_card_model_gives_its_quickest_read() {
        assert_eq!(
            quickest_read_ns(&SimTarget::from_spec("sim:demo").unwrap().params),
            120_725
        );
    }

    fn summary() -> Summary {
        Summary {
            reads: 0,
            writes: 0,
            bytes_read: 0,
            bytes_written: 0,
            flushes: 0,
            discards: 0,
            bytes_discarded: 0,
            sizes: Default::default(),
            most_in_flight: 1,
            answers: 5000,
            late: 0,
            late_mean_ns: 0,
            late_max_ns: 0,
            idle_arrivals: 5000,
            idle_wait_mean_ns: 0,
            idle_card_mean_ns: 170_000,
            refused: 0,
            overtaken: 0,
            gc_events: 0,
            flash_work: crate::sim::SimTarget::new("sim:demo", crate::sim::params::Params::default()).flash_report(),
            device_s: 1.0,
            wall_s: 1.0,
            recorded: None,
        }
    }

    /// The summary's timing says one thing, which starts with `words`.
    fn says_only(s: &Summary, words: &str) {
        let lines = timing_lines(s);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with(words), "{}", lines[0]);
    }

    #[test]
    fn timing_lines_say_late_answers_and_waiting_programs_and_nothing_else() {
        assert!(timing_lines(&summary()).is_empty());
        let late = Summary {
            late: 12,
            late_mean_ns: 85_100,
            late_max_ns: 1_200_000,
            ..summary()
        };
        // The words scripts/probe-vs-emulate.sh and emulate-vs-model.sh grep.
        says_only(
            &late,
            "12 of 5000 answers late (a mean 85.1 µs past their moment, the latest 1.20 ms)",
        );
        let overtaken = Summary {
            overtaken: 3,
            ..summary()
        };
        says_only(&overtaken, "3 requests reached the card after later ones");
        let one = Summary {
            overtaken: 1,
            ..summary()
        };
        says_only(&one, "1 request reached the card after later ones");
        let waiting = Summary {
            idle_wait_mean_ns: 480_000,
            ..summary()
        };
        says_only(
            &waiting,
            "5000 requests came while none was in flight, a mean 480.0 µs later",
        );
        let few = Summary {
            idle_arrivals: 20,
            ..waiting.clone()
        };
        assert!(timing_lines(&few).is_empty(), "20 requests are too few to say");
        let slow_card = Summary {
            idle_card_mean_ns: 47_000_000,
            ..waiting
        };
        assert!(
            timing_lines(&slow_card).is_empty(),
            "480 µs beside 47 ms writes is nothing"
        );
    }
}
