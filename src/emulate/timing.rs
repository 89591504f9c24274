//! When an emulation answers: the path's own overhead, measured per
//! operation and size, and a wait that ends at the due moment.
//!
//! Measured on the project's 2-core machine (`scripts/emulate-vs-model.sh`,
//! fio 4 KiB random reads at QD 1 on sim:demo, 170.8 µs a read in the
//! model) while two builds ran beside it: with the serving threads at the
//! normal priority fio got 2,008-2,556 IOPS, at nice -20 1,610-2,968, in
//! the lowest real-time class (SCHED_FIFO 1) 4,770-5,450 against the
//! model's 5,857. A woken thread of normal priority waits for the build's
//! compiler to use up its slice (milliseconds), nice or not; a real-time
//! one runs at once. So the threads that answer run real-time, and the
//! wait they do is short: a sleep to just before the due moment, then a
//! spin.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::targets::{AlignedBuf, Op};

/// Calibrated sizes: each op at each of these (raised to the sector size).
pub const CALIBRATED_SIZES: [u32; 4] = [4096, 65536, 262144, 524288];
/// Round trips timed per op and size: the median of 100 moved by 2-3 µs
/// between runs on an idle machine.
const CALIBRATION_ROUNDS: usize = 100;
/// Sleeps timed to learn how late a sleep ends.
const WAKE_ROUNDS: usize = 50;
/// The sleep timed: about a 4 KiB read's time on the built-in cards.
const WAKE_SLEEP: Duration = Duration::from_micros(200);

/// The path's overhead (ns) per operation at each calibrated size.
#[derive(Debug, Clone, Default)]
pub struct Overhead {
    pub read: Vec<(u32, u64)>,
    pub write: Vec<(u32, u64)>,
}

impl Overhead {
    /// The overhead of a request: linear between the calibrated sizes,
    /// and along the last two beyond them.
    pub fn at(&self, op: Op, len: u32) -> u64 {
        let t = match op {
            Op::Read => &self.read,
            Op::Write => &self.write,
        };
        match t.len() {
            0 => 0,
            1 => t[0].1,
            n => {
                let i = t.iter().position(|&(l, _)| l >= len).unwrap_or(n - 1).clamp(1, n - 1);
                let ((l0, o0), (l1, o1)) = (t[i - 1], t[i]);
                let slope = (o1 as f64 - o0 as f64) / (f64::from(l1) - f64::from(l0)).max(1.0);
                (o0 as f64 + slope * (f64::from(len) - f64::from(l0))).max(0.0) as u64
            }
        }
    }
}

/// Put the calling thread in the lowest real-time class (SCHED_FIFO,
/// priority 1), or back in the normal one; threads it starts inherit the
/// class. Err when the system refuses (no CAP_SYS_NICE, or no real-time
/// time for this cgroup). Real-time threads are still held to the
/// kernel's real-time share (`/proc/sys/kernel/sched_rt_runtime_us`), and
/// the answering threads spin only [`Waiter`]'s margin.
pub fn realtime(on: bool) -> std::io::Result<()> {
    let (policy, priority) = if on {
        (libc::SCHED_FIFO, 1)
    } else {
        (libc::SCHED_OTHER, 0)
    };
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler(2) on the calling thread (pid 0) reads the
    // sched_param it is given, which lives until the call returns.
    match unsafe { libc::sched_setscheduler(0, policy, &param) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Ask for timers to fire when asked (1 ns of slack instead of 50 µs),
/// for this thread and the threads it starts: where real-time is refused,
/// a sleep of a normal thread otherwise ends 50-70 µs late here (15 µs
/// with 1 ns). Real-time threads get no slack anyway.
pub fn fine_timer_slack() {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

/// A wait that ends at a given moment: a sleep to `margin` before it (how
/// late a sleep ends on this machine, measured), then a spin.
#[derive(Debug, Clone, Copy)]
pub struct Waiter {
    margin: Duration,
}

impl Waiter {
    /// Time [`WAKE_ROUNDS`] sleeps of [`WAKE_SLEEP`] on this thread: the
    /// margin is the 90th percentile of how late they ended.
    pub fn measure() -> Waiter {
        let mut late: Vec<Duration> = (0..WAKE_ROUNDS)
            .map(|_| {
                let t0 = Instant::now();
                std::thread::sleep(WAKE_SLEEP);
                t0.elapsed().saturating_sub(WAKE_SLEEP)
            })
            .collect();
        late.sort_unstable();
        Waiter {
            margin: late[late.len() * 9 / 10],
        }
    }

    /// Wait until `due`; how late the wait ended (ns), 0 if on time.
    pub fn until(&self, due: Instant) -> u64 {
        let now = Instant::now();
        if now < due {
            let left = due - now;
            if left > self.margin {
                std::thread::sleep(left - self.margin);
            }
            while Instant::now() < due {
                std::hint::spin_loop();
            }
        }
        Instant::now().saturating_duration_since(due).as_nanos() as u64
    }
}

/// While calibrating: what the daemon saw, each request with the time it
/// held it (each is answered at once, and the model never sees it).
///
/// Holding each request 200 µs, as a 4 KiB read is held when serving,
/// changed nothing: fio at QD 1 on sim:demo gave 5,520-5,563 IOPS
/// calibrated without a hold, 5,171-5,617 with one.
#[derive(Debug, Default)]
pub struct Calibrating {
    pub seen: Vec<(Op, u32, Duration)>,
}

/// Calibration: [`CALIBRATION_ROUNDS`] direct requests of each op and size
/// through `dev`; per op and size, the median of the round trip less the
/// time the daemon held it. A size the path split (the daemon saw other
/// than one request of that size) is left out, and `Overhead::at` reaches
/// it along its neighbours. `record` is what the daemon saw.
pub fn calibrate(dev: &str, sizes: &[u32], record: &Mutex<Calibrating>) -> std::io::Result<Overhead> {
    let record = || record.lock().unwrap_or_else(|p| p.into_inner());
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)?;
    let mut o = Overhead::default();
    for op in [Op::Read, Op::Write] {
        for &len in sizes {
            let mut buf = AlignedBuf::new(len as usize);
            let mut times: Vec<u64> = Vec::with_capacity(CALIBRATION_ROUNDS);
            for _ in 0..CALIBRATION_ROUNDS {
                record().seen.clear();
                let t0 = Instant::now();
                match op {
                    Op::Read => f.read_exact_at(buf.as_mut_slice(), 0)?,
                    Op::Write => f.write_all_at(buf.as_slice(), 0)?,
                }
                let took = t0.elapsed();
                let held = match record().seen[..] {
                    [(o, l, h)] if o == op && l == len => Some(h),
                    _ => None,
                };
                if let Some(h) = held {
                    times.push(took.saturating_sub(h).as_nanos() as u64);
                }
            }
            if times.len() < CALIBRATION_ROUNDS / 2 {
                continue;
            }
            times.sort_unstable();
            let median = times[times.len() / 2];
            match op {
                Op::Read => o.read.push((len, median)),
                Op::Write => o.write.push((len, median)),
            }
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_linear_between_calibrated_sizes_and_beyond() {
        let o = Overhead {
            read: vec![(4096, 20_000), (65536, 30_000)],
            write: vec![],
        };
        assert_eq!(o.at(Op::Read, 4096), 20_000);
        assert_eq!(o.at(Op::Read, 34816), 25_000);
        assert_eq!(o.at(Op::Read, 126976), 40_000);
        // Below the smallest: along the first two, never below zero.
        assert_eq!(o.at(Op::Read, 512), 19_416);
        assert_eq!(o.at(Op::Write, 4096), 0, "nothing calibrated: nothing taken off");
    }

    #[test]
    fn a_wait_ends_at_its_moment_not_before() {
        let w = Waiter {
            margin: Duration::from_micros(50),
        };
        let due = Instant::now() + Duration::from_micros(300);
        w.until(due);
        assert!(Instant::now() >= due);
        // A moment already past: no wait, and how late it is.
        let past = Instant::now() - Duration::from_millis(2);
        assert!(w.until(past) >= 2_000_000);
    }
}
