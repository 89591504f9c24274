//! One bench test as it runs: a warm-up that does not count, then
//! batches (a twentieth of the bytes or of the time each, one timeline
//! point each) built and run in parts, every latency into the histogram.

use hdrhistogram::Histogram;

use super::result::{DISTRIBUTION_SHARES, FLOOR_NS, FLOOR_REQUESTS, FLOOR_SLOWEST, Quantile};
use super::{BenchTest, LONGEST_NS, Latency, Limit, MAX_REQUESTS, Options, Point, Rw, TIMELINE_POINTS, WARMUP_SHARE};
use crate::measure::MeasureError;
use crate::random::xorshift as next;
use crate::targets::{AlignedBuf, Completion, Request, Target, run_all};

/// The `k`th request of the test.
fn request(o: &Options, k: u64, rng: &mut u64) -> Request {
    let blocks = o.area.1 / o.bs;
    let b = if o.rw.random() { next(rng) % blocks } else { k % blocks };
    let slot = (k % o.qd as u64) * o.bs;
    let write = match o.rw {
        Rw::Read | Rw::RandRead => false,
        Rw::Write | Rw::RandWrite => true,
        Rw::RandRw => next(rng) % 100 >= u64::from(o.rwmix_read),
    };
    let off = o.area.0 + b * o.bs;
    // check() bounded bs (MAX_BS fits 32 bits) and bs x qd (MAX_BUFFER).
    let (len, slot) = (o.bs as u32, slot as usize);
    if write {
        Request::write(off, len, slot)
    } else {
        Request::read(off, len, slot)
    }
}

/// Most requests built and run at once: a batch runs in parts of this
/// many, so a test's memory does not grow with --size (the 2^24 requests
/// of `--bs 512 --size 8G`, built at once, took 84 MB).
const PART_MOST: u64 = 1 << 16;

/// Run the test's requests `from..from + count` in parts, handing each
/// part's completions to `record` and stopping after a part once `enough`
/// (the target, the requests run) says so: how many ran and their bytes.
/// A time-limited test's parts are a few queues' worth, the limit checked
/// after each: a batch sized while writes were quick must not run on once
/// they turn into merges of seconds each (hundreds of 4 KiB random writes
/// past a card's random-write slots took 470 device-seconds of a 5-second
/// test). The requests that did not run are drawn all the same, so the
/// offsets that follow do not depend on where a batch stopped.
fn run_parts(
    t: &mut dyn Target,
    o: &Options,
    buf: &mut AlignedBuf,
    rng: &mut u64,
    (from, count): (u64, u64),
    record: &mut dyn FnMut(&[Completion]),
    enough: &dyn Fn(&dyn Target, u64) -> bool,
) -> Result<(u64, u64), MeasureError> {
    let most = match o.limit {
        Limit::DeviceNs(_) => 4 * o.qd as u64,
        Limit::Bytes(_) => PART_MOST,
    };
    let (mut ran, mut moved) = (0u64, 0u64);
    let mut reqs = Vec::with_capacity(most.min(count) as usize);
    while ran < count {
        let n = most.min(count - ran);
        reqs.clear();
        reqs.extend((0..n).map(|j| request(o, from + ran + j, rng)));
        record(&run_all(t, &reqs, o.qd, buf)?);
        ran += n;
        moved += reqs.iter().map(|r| u64::from(r.len)).sum::<u64>();
        if enough(t, ran) {
            break;
        }
    }
    for j in ran..count {
        request(o, from + j, rng);
    }
    Ok((ran, moved))
}

/// Most requests in one batch of a test limited by time (a fast device's
/// batch; the limit is checked between batches).
const TIMED_BATCH_MOST: u64 = 1 << 16;

/// How far past its own limit a test limited by time may go to reach the
/// floor ([`FLOOR_REQUESTS`] and [`FLOOR_NS`]): while the device time
/// stays before `until_ns` (what the step's budget leaves), each of the
/// test's own device-seconds counted `1 + after` times (what it writes is
/// journalled, put back and read again after the step).
#[derive(Debug, Clone, Copy)]
pub struct Reach {
    pub until_ns: u64,
    pub after: f64,
}

#[cfg(test)]
impl Reach {
    /// No budget: the floor is always reached (the tests of the tests).
    pub const UNBOUNDED: Reach = Reach {
        until_ns: u64::MAX,
        after: 0.0,
    };
}

/// The test's own device time: a piece of the area journalled mid-test
/// (its originals read first) is not the test's throughput.
fn clock(t: &dyn Target) -> u64 {
    t.device_time_ns().saturating_sub(t.own_time_ns())
}

/// One test, the `of.0`th of `of.1`, for the progress bar; `reach`: how
/// far it may go for its floor.
pub fn run_counted(
    t: &mut dyn Target,
    o: &Options,
    of: (usize, usize),
    sink: &dyn crate::measure::Progress,
    reach: Reach,
) -> Result<BenchTest, MeasureError> {
    const PER_TEST: u64 = 1000;
    let progress = |part: f64| {
        sink.advance(
            of.0 as u64 * PER_TEST + (part.clamp(0.0, 1.0) * PER_TEST as f64) as u64,
            of.1 as u64 * PER_TEST,
        )
    };
    super::check(o, t.description())?;
    let mut buf = incompressible(o)?;
    let mut rng = o.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let k = warm_up(t, o, &mut buf, &mut rng)?;
    let timed = timed_batches(t, o, (&mut buf, &mut rng), k, reach, &progress)?;
    Ok(figures(o, timed))
}

/// The buffer the test writes from, a queue's worth of requests: its own
/// step because what the card is given decides what it does with it.
fn incompressible(o: &Options) -> Result<AlignedBuf, MeasureError> {
    // Incompressible data: a seeded stream, not zeros a card could compress.
    let mut buf = crate::measure::buffer(o.bs.saturating_mul(o.qd as u64))?;
    let mut fill = o.seed | 1;
    for w in buf.as_mut_slice().chunks_mut(8) {
        let v = next(&mut fill).to_le_bytes();
        w.copy_from_slice(&v[..w.len()]);
    }
    Ok(buf)
}

/// The warm-up: requests that run and are not counted, so the timed
/// batches start on a card already busy with this test. Returns how many
/// requests it drew, where the timed batches go on from.
fn warm_up(t: &mut dyn Target, o: &Options, buf: &mut AlignedBuf, rng: &mut u64) -> Result<u64, MeasureError> {
    let qd = o.qd as u64;
    let blocks = o.area.1 / o.bs;
    // The warm-up, not counted: a tenth of the requests, or of the time.
    // A timed sequential write ends at the end of its area (below), so its
    // warm-up leaves the area room for the floor: FLOOR_REQUESTS, or a
    // device-second at the warm-up's pace if that is more (quick's 1 MiB
    // writes in 64 MiB on sim:demo: a warm-up of 18 had left 46).
    let mut k = 0u64;
    let warm_start = clock(t);
    let room = |t: &dyn Target, k: u64| {
        let per_request = clock(t).saturating_sub(warm_start) as f64 / k.max(1) as f64;
        let need = FLOOR_REQUESTS.max((FLOOR_NS as f64 / per_request.max(1.0)).ceil() as u64);
        o.rw != Rw::Write || k.saturating_add(need) < blocks
    };
    loop {
        let count = match o.limit {
            Limit::Bytes(size) => ((size / o.bs) / WARMUP_SHARE).max(qd),
            Limit::DeviceNs(_) => 2 * qd,
        };
        run_parts(t, o, buf, rng, (k, count), &mut |_| {}, &|_, _| false)?;
        k += count;
        let more = match o.limit {
            Limit::DeviceNs(ns) => {
                clock(t).saturating_sub(warm_start) < ns / WARMUP_SHARE && k < MAX_REQUESTS && room(t, k)
            }
            Limit::Bytes(_) => false,
        };
        if !more {
            break;
        }
    }
    Ok(k)
}

/// What the timed batches measured, for [`figures`].
struct Timed {
    hist: Histogram<u64>,
    timeline: Vec<Point>,
    /// Requests run, and their bytes.
    done: u64,
    bytes: u64,
    /// The test's own device-seconds.
    elapsed_s: f64,
    /// Its [`FLOOR_SLOWEST`] slowest requests held half its requests' time.
    by_few: bool,
}

/// The slowest requests of a test so far, and the time of them all: whether
/// a few hold most of it ([`FLOOR_SLOWEST`]).
#[derive(Default)]
struct Slowest {
    ns: [u64; FLOOR_SLOWEST],
    total_ns: u64,
}

impl Slowest {
    fn add(&mut self, ns: u64) {
        self.total_ns = self.total_ns.saturating_add(ns);
        if let Some(i) = self.ns.iter().position(|&s| ns > s) {
            self.ns[i..].rotate_right(1);
            self.ns[i] = ns;
        }
    }

    fn hold_half(&self) -> bool {
        self.ns.iter().map(|&n| u128::from(n)).sum::<u128>() * 2 >= u128::from(self.total_ns).max(1)
    }

    /// Request time still to come before the slowest no longer hold half
    /// (at least, if none of it is slow): what running on would cost.
    fn short_ns(&self) -> u64 {
        let slow = self.ns.iter().fold(0u64, |a, &n| a.saturating_add(n));
        slow.saturating_mul(2).saturating_sub(self.total_ns)
    }
}

/// The timed batches, every latency into the histogram and one timeline
/// point a batch, from request `k` on (after the warm-up): the step that
/// decides when the test ends (its limit, its floor, the budget's reach).
fn timed_batches(
    t: &mut dyn Target,
    o: &Options,
    (buf, rng): (&mut AlignedBuf, &mut u64),
    k: u64,
    reach: Reach,
    progress: &dyn Fn(f64),
) -> Result<Timed, MeasureError> {
    let qd = o.qd as u64;
    let blocks = o.area.1 / o.bs;
    // 1 ns to an hour at 3 significant digits (fio's percentiles carry
    // three); a request slower than an hour is counted as an hour.
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, LONGEST_NS, 3).map_err(|e| MeasureError::Internal(e.to_string()))?;
    let start = clock(t);
    let mut timeline = Vec::new();
    let (mut done, mut bytes) = (0u64, 0u64);
    // Batches: a twentieth of the bytes, or sized from the last batch to
    // take about a twentieth of the time (a slow card's batch stays short).
    // A timed sequential write ends at the end of its area rather than go
    // round it: a lap rewrites AUs the card may still be merging, and the
    // sustained figure of sim:demo (39 MB/s) dipped to 26 MB/s at each lap
    // of quick's 64 MiB, which took its U3 and V30 away. It goes round only
    // as far as its floor needs (a RAM disk writes 1 GiB in a second).
    let lapped = |done: u64| o.rw == Rw::Write && done > 0 && k + done >= blocks;
    let mut batch = match o.limit {
        Limit::Bytes(size) => (size / o.bs).div_ceil(TIMELINE_POINTS).max(qd),
        Limit::DeviceNs(_) => 2 * qd,
    };
    // A test limited by time runs on past its limit (its time, or its
    // area's end) until it has its floor, or the step's budget ends it;
    // one limited by size stops at its size, and either may end short.
    let slowest = std::cell::RefCell::new(Slowest::default());
    let floor = |t: &dyn Target, done: u64| {
        done >= FLOOR_REQUESTS && clock(t).saturating_sub(start) >= FLOOR_NS && !slowest.borrow().hold_half()
    };
    // Whether the floor, at the pace so far, would end past what the budget
    // leaves (with what the test's writes cost after it): then it ends
    // short now rather than spend the budget and end short anyway.
    let out_of_budget = |t: &dyn Target, done: u64| {
        let elapsed = clock(t).saturating_sub(start) as f64;
        let per_request = elapsed / done.max(1) as f64;
        let more = (FLOOR_REQUESTS.saturating_sub(done) as f64 * per_request)
            .max(FLOOR_NS as f64 - elapsed)
            .max(slowest.borrow().short_ns() as f64);
        let end = t.device_time_ns() as f64 + more + (elapsed + more) * reach.after;
        end >= reach.until_ns as f64
    };
    let ended = |t: &dyn Target, done: u64| match o.limit {
        Limit::Bytes(size) => done >= size / o.bs,
        Limit::DeviceNs(ns) => {
            let limit = clock(t).saturating_sub(start) >= ns || lapped(done);
            done >= MAX_REQUESTS || (limit && (floor(t, done) || out_of_budget(t, done)))
        }
    };
    loop {
        if ended(t, done) {
            break;
        }
        let count = match o.limit {
            Limit::Bytes(size) => batch.min(size / o.bs - done),
            Limit::DeviceNs(_) => batch,
        };
        let before = clock(t);
        // A time-limited batch stops where the test ends (mid-batch: a
        // batch sized while writes were quick must not run on once they
        // merge); one limited by size runs whole.
        let enough = |t: &dyn Target, ran: u64| match o.limit {
            Limit::DeviceNs(_) => ended(t, done + ran),
            Limit::Bytes(_) => false,
        };
        let record = &mut |cs: &[Completion]| {
            for c in cs {
                hist.saturating_record(c.duration_ns.max(1));
                slowest.borrow_mut().add(c.duration_ns);
            }
        };
        let (count, moved) = run_parts(t, o, buf, rng, (k + done, count), record, &enough)?;
        let spent = clock(t).saturating_sub(before).max(1);
        bytes += moved;
        done += count;
        timeline.push(Point {
            t_s: clock(t).saturating_sub(start) as f64 / 1e9,
            bytes_per_sec: moved as f64 * 1e9 / spent as f64,
        });
        progress(match o.limit {
            Limit::Bytes(size) => done as f64 / (size / o.bs) as f64,
            Limit::DeviceNs(ns) => clock(t).saturating_sub(start) as f64 / ns as f64,
        });
        if let Limit::DeviceNs(ns) = o.limit {
            // A twentieth of the time it runs, its floor's if that is longer.
            let per_request = spent as f64 / count as f64;
            let goal = ns.max(FLOOR_NS) as f64 / TIMELINE_POINTS as f64;
            batch = ((goal / per_request) as u64).clamp(qd, TIMED_BATCH_MOST.max(qd));
        }
    }
    let elapsed_s = clock(t).saturating_sub(start).max(1) as f64 / 1e9;
    let by_few = slowest.borrow().hold_half();
    Ok(Timed {
        hist,
        timeline,
        done,
        bytes,
        elapsed_s,
        by_few,
    })
}

/// The test's figures from what the timed batches measured: rates and
/// the latency quantiles, then whether the sample is short. Its own step
/// because it reads the measurement and touches the target no more.
fn figures(o: &Options, m: Timed) -> BenchTest {
    let Timed {
        hist,
        timeline,
        done,
        bytes,
        elapsed_s: elapsed,
        by_few,
    } = m;
    let q = |p: f64| hist.value_at_quantile(p);
    let mut test = BenchTest {
        name: format!("{} {} Q{}", o.rw.name(), crate::units::Iec(o.bs), o.qd),
        rw: o.rw,
        pattern: if o.rw.random() { "random" } else { "sequential" }.into(),
        block_size: o.bs,
        queue_depth: o.qd,
        requests: done,
        iops: done as f64 / elapsed,
        bytes_per_sec: bytes as f64 / elapsed,
        latency_ns: Latency {
            mean: hist.mean(),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: hist.max(),
            distribution: DISTRIBUTION_SHARES
                .iter()
                .map(|&share| Quantile { share, ns: q(share) })
                .collect(),
        },
        timeline,
        short_sample: by_few,
    };
    test.settle();
    test
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::targets::{Completions, TargetDescription};

    /// A card that notes the longest batch it was handed.
    struct Longest {
        card: SimTarget,
        most: usize,
    }

    impl Target for Longest {
        fn description(&self) -> &TargetDescription {
            self.card.description()
        }
        fn run(&mut self, r: &[Request], qd: usize, buf: &mut AlignedBuf) -> Completions {
            self.most = self.most.max(r.len());
            self.card.run(r, qd, buf)
        }
        fn device_time_ns(&self) -> u64 {
            self.card.device_time_ns()
        }
    }

    /// A 1 MiB sequential write in 16 MiB on sim:demo (26 ms a request),
    /// limited to 100 ms: on to its floor, round its area, when the budget
    /// allows; else it ends short at once. A --size of one request is
    /// short whatever the budget.
    #[test]
    fn a_timed_test_runs_on_to_its_floor_within_the_budget() {
        let o = Options {
            rw: Rw::Write,
            bs: 1 << 20,
            qd: 1,
            limit: Limit::DeviceNs(100_000_000),
            area: (1 << 30, 16 << 20),
            rwmix_read: 70,
            seed: 1,
        };
        let mut card = SimTarget::from_spec("sim:demo").unwrap();
        let b = run_counted(&mut card, &o, (0, 1), &(), Reach::UNBOUNDED).unwrap();
        assert!(
            b.requests >= FLOOR_REQUESTS && b.device_s() >= 1.0,
            "{} in {} s",
            b.requests,
            b.device_s()
        );
        // 64 requests take 1.7 s (the later of the two), checked every
        // four.
        assert!(
            b.requests < FLOOR_REQUESTS + 4,
            "no further than the floor: {}",
            b.requests
        );
        assert!(!b.short_sample);
        let mut card = SimTarget::from_spec("sim:demo").unwrap();
        let now = card.device_time_ns();
        let tight = Reach {
            until_ns: now + 500_000_000,
            after: 0.0,
        };
        let b = run_counted(&mut card, &o, (0, 1), &(), tight).unwrap();
        assert!(
            b.short_sample && b.device_s() < 0.2,
            "{} in {} s",
            b.requests,
            b.device_s()
        );
        let sized = Options {
            limit: Limit::Bytes(1 << 20),
            ..o
        };
        let b = run_counted(
            &mut SimTarget::from_spec("sim:demo").unwrap(),
            &sized,
            (0, 1),
            &(),
            Reach::UNBOUNDED,
        )
        .unwrap();
        assert_eq!((b.requests, b.short_sample), (1, true));
        assert!(
            b.short().unwrap().starts_with("short sample: 1 request, 2"),
            "{:?}",
            b.short()
        );
    }

    /// 2^22 random reads of 512 bytes over a 1 PiB card: batches of a
    /// twentieth (209716 requests) and a warm-up of a tenth reach the card
    /// in parts of at most `PART_MOST`, where each was built whole; the
    /// figures count every request.
    #[test]
    fn a_test_limited_by_size_runs_in_bounded_parts() {
        let mut t = Longest {
            card: SimTarget::from_spec("sim:demo,capacity=1P,jitter=0").unwrap(),
            most: 0,
        };
        let o = Options {
            rw: Rw::RandRead,
            bs: 512,
            qd: 4,
            limit: Limit::Bytes(2 << 30),
            area: (0, 1 << 50),
            rwmix_read: 70,
            seed: 1,
        };
        let b = run_counted(&mut t, &o, (0, 1), &(), Reach::UNBOUNDED).unwrap();
        assert_eq!(b.requests, 1 << 22);
        assert_eq!(t.most as u64, PART_MOST);
        assert_eq!(b.timeline.len() as u64, TIMELINE_POINTS);
    }

    /// A few slow requests holding half the time are what a figure would
    /// be drawn from: [`FLOOR_SLOWEST`] of them, no fewer.
    #[test]
    fn the_slowest_few_are_kept_and_weighed_against_all() {
        let mut s = Slowest::default();
        for ns in [5, 1, 9, 3] {
            s.add(ns);
        }
        assert_eq!(s.ns[..4], [9, 5, 3, 1]);
        assert_eq!(s.ns[4..], [0; FLOOR_SLOWEST - 4]);
        assert!(s.hold_half(), "fewer requests than the few");
        let mut s = Slowest::default();
        // Two merges of 2.7 s among 64 writes of 0.8 ms.
        for _ in 0..64 {
            s.add(800_000);
        }
        s.add(2_700_000_000);
        s.add(2_700_000_000);
        assert!(s.hold_half());
        assert_eq!(
            s.short_ns(),
            2 * (2 * 2_700_000_000 + (FLOOR_SLOWEST as u64 - 2) * 800_000) - (2 * 2_700_000_000 + 64 * 800_000)
        );
        // Until the rest of the requests hold half the time.
        let each = 800_000;
        let more = (2 * 2_700_000_000 + 2 * (FLOOR_SLOWEST as u64 - 2) * each) / each;
        for _ in 0..more - 64 {
            s.add(each);
        }
        assert!(s.hold_half(), "one request short");
        assert_eq!(s.short_ns(), 0, "at exactly half");
        s.add(each);
        assert!(!s.hold_half());
        assert_eq!(s.total_ns, 2 * 2_700_000_000 + (more + 1) * each);
    }
}
