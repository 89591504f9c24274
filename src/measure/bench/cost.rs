//! What a writing test's area costs around the test: the pieces it is
//! declared (and so journalled) in, and the journal, restore and check of
//! every piece written, which the step's budget pays for. Nothing here
//! grows with the area: a test's pieces are counted before they are
//! listed, and what earlier tests wrote is kept as one span each (kept as
//! one entry per piece, a 1 PiB random-read area alone took 4.2 GB).

use super::{BenchTest, Options, Rw, WARMUP_SHARE};
use crate::safety::ranges::Range;

/// The largest piece a writing test's area is declared in ([`piece`]):
/// each is journalled whole at its first write (see
/// `safety::ranges::normalize`), so a sequential write that stops after 10
/// MiB of a 64 MiB area journals, writes back and verifies what its pieces
/// hold (11 MiB in 1 MiB pieces), not 64.
pub const PIECE: u64 = 4 << 20;

/// Most pieces one writing test declares (256 GiB of 4 MiB pieces): the
/// run lists them, checks every write against them, and a journal's header
/// names each, so a writing area past this is refused before anything is
/// allocated. A random write that large is mostly journal anyway: nearly
/// every request is the first to its piece, 4 MiB read and put back.
pub const MAX_PIECES: u64 = 1 << 16;

/// Pieces a random-writing test's area is declared in where its requests
/// allow (see [`piece`]): a 64 MiB area (quick's and a1's) in 4 KiB
/// pieces. Each is one range of the journal's header (about 30 bytes of
/// its at most 4 MiB, `safety::journal`), so a quick run declares
/// about half a megabyte.
const RANDOM_PIECES: u64 = 1 << 14;

/// The least piece of a sequential test: one journal record
/// (`safety::journal::CHUNK`), so its journal reads, write-backs and
/// checks are as large as in [`PIECE`]s, while a random write in the same
/// area (quick's, a1's, cdm's), whose pieces merge into these, journals 1
/// MiB rather than 4.
const SEQUENTIAL_PIECE: u64 = 1 << 20;

/// One piece of `o`'s area, in whole requests: the least piece that keeps
/// a random test's pieces to [`RANDOM_PIECES`] (one request in 64 MiB) or
/// a sequential test's to [`MAX_PIECES`] ([`SEQUENTIAL_PIECE`] up to 64
/// GiB), and never more than [`PIECE`]. A random write journals, puts back
/// and reads again the whole piece it lands in: in 4 MiB pieces quick's
/// 160 random 4 KiB writes behind at91-mci (2 MB/s) journalled its whole
/// 64 MiB area, about 100 device-seconds around a 5-second test.
pub fn piece(o: &Options) -> u64 {
    let (most, least) = if o.rw.random() {
        (RANDOM_PIECES, o.bs)
    } else {
        (MAX_PIECES, SEQUENTIAL_PIECE)
    };
    reach(o)
        .div_ceil(most)
        .max(least)
        .div_ceil(o.bs)
        .max(1)
        .saturating_mul(o.bs)
        .min(whole_piece(o))
}

/// [`PIECE`] in whole requests: the largest piece, and the smallest area
/// a random write is cut to.
fn whole_piece(o: &Options) -> u64 {
    PIECE.div_ceil(o.bs).max(1) * o.bs
}

/// The bytes of `o`'s area its requests reach: whole blocks.
fn reach(o: &Options) -> u64 {
    o.area.1 - o.area.1 % o.bs
}

/// How many pieces `o`'s area is declared in.
pub fn count(o: &Options) -> u64 {
    reach(o).div_ceil(piece(o))
}

/// A writing test's area as declared ranges: pieces of [`piece`], the last
/// one what is left; `check` bounds their [`count`] first.
pub fn pieces(o: &Options) -> Vec<Range> {
    let (len, piece) = (reach(o), piece(o));
    (0..len.div_ceil(piece))
        .map(|k| Range {
            offset: o.area.0 + k * piece,
            len: piece.min(len - k * piece),
        })
        .collect()
}

/// What a random-write test's area costs: each piece of it not written
/// before is read into the journal before the test, and every piece
/// written is written back and read again after the step, at the
/// sequential rates the run's earlier tests measured. On a slow host
/// (at91-mci, 2 MB/s) quick's 64 MiB area was 90 device-seconds of journal
/// and as many of restore around a 5-second test.
/// The restore and its check take this many times what the sequential
/// rates say: on an at91-mci card of 64 MiB AUs (seed 100076 of the
/// budget example's hard family) quick's 64 MiB took 133 device-seconds
/// to write back and read again against 64 at the rates, the written-back
/// AUs merging out of random mode and a noisy card's stalls on 1 MiB
/// requests.
const RESTORE_FACTOR: f64 = 2.0;

/// What each device-second of a sequential write costs around the test,
/// where reads are no faster than writes (a slow host's bus, where it
/// matters): its journal's read of the originals (1), then the write back
/// and the check, [`RESTORE_FACTOR`] each. A test that runs on for its
/// floor counts its own time this many times more against the budget.
pub const AFTER_WRITE: f64 = 1.0 + 2.0 * RESTORE_FACTOR;

#[derive(Debug, Default)]
pub struct Cost {
    read_bytes_per_sec: Option<f64>,
    write_bytes_per_sec: Option<f64>,
    /// The bytes earlier writing tests wrote, in whole pieces: (start,
    /// end), sorted and apart, at most one per test.
    written: Vec<(u64, u64)>,
    /// The bytes of the pieces earlier random writes reached, scattered
    /// over their areas: counted, not placed.
    scattered: u64,
    /// Requests a second of the last random-reading test: a random write's
    /// pieces are at most its requests, and few cards write at random
    /// faster than they read.
    random_iops: Option<f64>,
    /// Each writing test's area and piece: a write is journalled in the
    /// largest piece of those whose areas meet its own (declared pieces
    /// that overlap merge, `safety::ranges::normalize`).
    areas: Vec<((u64, u64), u64)>,
}

impl Cost {
    /// The cost of a run of `tests`.
    pub fn of(tests: &[Options]) -> Cost {
        Cost {
            areas: tests
                .iter()
                .filter(|o| o.rw.writes())
                .map(|o| (o.area, piece(o)))
                .collect(),
            ..Cost::default()
        }
    }

    /// The piece a write of `o` is journalled in.
    fn journalled(&self, o: &Options) -> u64 {
        let (start, end) = (o.area.0, o.area.0.saturating_add(o.area.1));
        self.areas
            .iter()
            .filter(|&&((s, l), _)| s < end && start < s.saturating_add(l))
            .map(|&(_, p)| p)
            .fold(piece(o), u64::max)
    }

    pub fn learn(&mut self, o: &Options, t: &BenchTest) {
        // The typical request's rate: one stall of a noisy card (30 times a
        // request) would otherwise cut the area of a test it never touched.
        let typical = (o.qd as u64).saturating_mul(o.bs) as f64 * 1e9 / (t.latency_ns.p50.max(1) as f64);
        let wrote = match o.rw {
            Rw::Read => {
                self.read_bytes_per_sec = Some(typical);
                0
            }
            Rw::Write => {
                self.write_bytes_per_sec = Some(typical);
                // The warm-up's requests too, and a queue in flight: every
                // piece they reached.
                let bytes = (t.requests + t.requests / WARMUP_SHARE + 2 * o.qd as u64).saturating_mul(o.bs);
                let piece = self.journalled(o);
                bytes.div_ceil(piece).saturating_mul(piece).min(reach(o))
            }
            Rw::RandWrite | Rw::RandRw => {
                // Every request may be the first to its piece.
                let requests = t.requests + t.requests / WARMUP_SHARE + 2 * o.qd as u64;
                self.scattered = self
                    .scattered
                    .saturating_add(requests.saturating_mul(self.journalled(o)).min(reach(o)));
                0
            }
            Rw::RandRead => {
                self.random_iops = Some(t.iops);
                0
            }
        };
        if wrote > 0 {
            self.mark(o.area.0, o.area.0 + wrote);
        }
    }

    /// Bytes a random-writing test of `o` may reach in `reach` bytes of
    /// its area: a piece for each request its limit holds at the random
    /// reads' rate, or the whole of it where no such rate is known.
    fn random_reach(&self, o: &Options, reach: u64) -> u64 {
        let Some(iops) = self.random_iops.filter(|_| o.rw.random() && o.rw.writes()) else {
            return reach;
        };
        let requests = (iops * o.limit_ns() as f64 / 1e9 * (1.0 + 1.0 / WARMUP_SHARE as f64)).ceil() as u64;
        requests
            .saturating_add(2 * o.qd as u64)
            .saturating_mul(self.journalled(o))
            .min(reach)
    }

    /// The bytes earlier tests wrote, placed or not.
    fn done(&self) -> u64 {
        self.written
            .iter()
            .map(|&(a, b)| b - a)
            .sum::<u64>()
            .saturating_add(self.scattered)
    }

    /// Add [start, end) to what was written, merging the spans it meets.
    fn mark(&mut self, mut start: u64, mut end: u64) {
        self.written.retain(|&(a, b)| {
            let apart = b < start || end < a;
            if !apart {
                (start, end) = (start.min(a), end.max(b));
            }
            apart
        });
        let at = self.written.partition_point(|&(a, _)| a < start);
        self.written.insert(at, (start, end));
    }

    /// Bytes of [start, end) that earlier tests wrote.
    fn covered(&self, start: u64, end: u64) -> u64 {
        self.written
            .iter()
            .map(|&(a, b)| b.min(end).saturating_sub(a.max(start)))
            .sum()
    }

    /// Device-seconds the restore and check of what earlier tests wrote
    /// will take after the step, at the sequential rates measured so far
    /// (none before a rate is known).
    pub fn restore_s(&self) -> f64 {
        let Some(read) = self.read_bytes_per_sec.or(self.write_bytes_per_sec) else {
            return 0.0;
        };
        let (read, write) = (read.max(1.0), self.write_bytes_per_sec.unwrap_or(read).max(1.0));
        RESTORE_FACTOR * self.done() as f64 * (1.0 / write + 1.0 / read)
    }

    /// The largest area, halving from the test's own down to [`PIECE`] (or
    /// one request), whose journal, and the restore and verification of
    /// everything written, fit in `left_s` device-seconds besides the
    /// test's limit. The test's own area where no sequential rate was
    /// measured.
    pub fn fitting_area(&self, o: &Options, left_s: f64) -> u64 {
        let Some(read) = self.read_bytes_per_sec.or(self.write_bytes_per_sec) else {
            return o.area.1;
        };
        let (read, write) = (read.max(1.0), self.write_bytes_per_sec.unwrap_or(read).max(1.0));
        let done = self.done();
        let cost = |area: u64| {
            let reach = area - area % o.bs;
            let new = self.random_reach(o, reach - self.covered(o.area.0, o.area.0 + reach));
            o.limit_ns() as f64 / 1e9
                + new as f64 / read
                + RESTORE_FACTOR * (done + new) as f64 * (1.0 / write + 1.0 / read)
        };
        let smallest = whole_piece(o);
        let mut area = o.area.1;
        while area > smallest && cost(area) > left_s {
            area = (area / 2).div_ceil(o.bs) * o.bs;
        }
        area.max(o.bs).min(o.area.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::bench::{Latency, Limit};

    const PIB: u64 = 1 << 50;

    fn options(rw: Rw, bs: u64, area: (u64, u64)) -> Options {
        Options {
            rw,
            bs,
            qd: 1,
            limit: Limit::DeviceNs(1_000_000_000),
            area,
            rwmix_read: 70,
            seed: 1,
        }
    }

    /// A test of `o` that ran `requests` at 100 µs each.
    fn ran(o: &Options, requests: u64) -> BenchTest {
        BenchTest {
            name: String::new(),
            rw: o.rw,
            pattern: String::new(),
            block_size: o.bs,
            queue_depth: o.qd,
            requests,
            iops: 10_000.0,
            bytes_per_sec: 1e4 * o.bs as f64,
            latency_ns: Latency {
                mean: 1e5,
                p50: 100_000,
                p90: 100_000,
                p99: 100_000,
                p999: 100_000,
                max: 100_000,
                distribution: Vec::new(),
            },
            timeline: Vec::new(),
            short_sample: false,
        }
    }

    /// Every pattern over a 1 PiB area: the cost keeps one span, where it
    /// kept an entry per 4 MiB piece (2^28 of them, 4.2 GB for a
    /// random-read bench), and cutting the area to the budget counts
    /// pieces instead of listing them.
    #[test]
    fn what_a_run_keeps_does_not_grow_with_the_area() {
        let mut cost = Cost::default();
        for rw in [Rw::Read, Rw::Write, Rw::RandRead, Rw::RandWrite, Rw::RandRw] {
            let o = options(rw, 512, (0, PIB));
            cost.learn(&o, &ran(&o, 10_000));
            assert!(cost.written.len() <= 1, "{rw:?}: {:?}", cost.written);
        }
        // The sequential write's pieces placed (10,000 requests of 512
        // bytes, their warm-up and queue: two pieces), the random ones
        // counted: 11,002 requests each, every one a 4 MiB piece's first.
        assert_eq!(cost.written, [(0, 2 * PIECE)]);
        assert_eq!(cost.scattered, 2 * 11_002 * PIECE);
        let o = options(Rw::RandWrite, 4096, (0, PIB));
        assert_eq!(count(&o), 1 << 28);
        assert_eq!(cost.fitting_area(&o, 1.0), PIECE, "halved down to one piece");
        assert_eq!(cost.fitting_area(&o, 1e12), PIB, "a budget that pays for it all");
    }

    /// A random write's piece is one request where the area allows, a
    /// sequential one's a journal record, else the fewest requests that
    /// keep their pieces to `RANDOM_PIECES` and `MAX_PIECES`; never more
    /// than `PIECE`.
    #[test]
    fn a_random_write_is_journalled_in_pieces_near_its_own_size() {
        for (rw, bs, area, piece_bytes) in [
            (Rw::RandWrite, 4096, 64 << 20, 4096),
            (Rw::RandRw, 4096, 256 << 20, 16 << 10),
            (Rw::RandWrite, 3 << 10, 1 << 30, 66 << 10),
            (Rw::RandWrite, 4096, PIB, PIECE),
            (Rw::RandWrite, 8 << 20, 64 << 20, 8 << 20),
            (Rw::Write, 4096, 64 << 20, 1 << 20),
            (Rw::Write, 1 << 20, 128 << 30, 2 << 20),
            (Rw::Write, 4096, PIB, PIECE),
        ] {
            let o = options(rw, bs, (0, area));
            assert_eq!(piece(&o), piece_bytes, "{rw:?} {bs} in {area}");
            let most = if rw.random() { RANDOM_PIECES } else { MAX_PIECES };
            assert!(count(&o) <= most || piece_bytes == PIECE, "{rw:?} {bs} in {area}");
        }
    }

    /// A random write in a sequential write's area is journalled in the
    /// sequential write's pieces, which its own merge into; in an area of
    /// its own, in its own.
    #[test]
    fn a_write_is_priced_in_the_pieces_it_is_journalled_in() {
        let shared = [
            options(Rw::Write, 1 << 20, (0, 64 << 20)),
            options(Rw::RandWrite, 4096, (0, 64 << 20)),
        ];
        let apart = [shared[0], options(Rw::RandWrite, 4096, (64 << 20, 64 << 20))];
        for (tests, piece) in [(shared, 1 << 20), (apart, 4096)] {
            let mut c = Cost::of(&tests);
            assert_eq!(c.journalled(&tests[1]), piece);
            c.learn(&tests[1], &ran(&tests[1], 10));
            assert_eq!(c.scattered, (10 + 1 + 2) * piece);
        }
    }

    /// Spans of different tests merge where they meet, and what is new in
    /// an area is what no earlier test wrote.
    #[test]
    fn spans_merge_and_count_what_is_new() {
        let mut c = Cost::default();
        c.mark(8 << 20, 16 << 20);
        c.mark(32 << 20, 40 << 20);
        c.mark(0, 4 << 20);
        assert_eq!(c.written, [(0, 4 << 20), (8 << 20, 16 << 20), (32 << 20, 40 << 20)]);
        c.mark(4 << 20, 32 << 20);
        assert_eq!(c.written, [(0, 40 << 20)]);
        assert_eq!(c.covered(36 << 20, 64 << 20), 4 << 20);
        // A sequential write's warm-up and queue in flight reach whole
        // pieces: 5 + 0 + 2 requests of 1 MiB, seven pieces.
        let mut c = Cost::default();
        let o = options(Rw::Write, 1 << 20, (1 << 30, 64 << 20));
        c.learn(&o, &ran(&o, 5));
        assert_eq!(c.written, [(1 << 30, (1 << 30) + (7 << 20))]);
    }

    /// A writing area of more pieces than a test may declare is refused
    /// before anything is listed; the largest allowed one is listed whole,
    /// and reads take any area.
    #[test]
    fn a_writing_area_past_the_pieces_allowed_is_refused() {
        use crate::targets::Target;
        let card = crate::sim::SimTarget::from_spec("sim:demo,capacity=1P").unwrap();
        let d = card.description();
        let most = MAX_PIECES * PIECE;
        for (rw, len, ok) in [
            (Rw::RandWrite, PIB, false),
            (Rw::Write, most + 4096, false),
            (Rw::RandRw, most, true),
            (Rw::RandRead, PIB, true),
        ] {
            let o = options(rw, 4096, (0, len));
            let r = super::super::check(&o, d);
            assert_eq!(r.is_ok(), ok, "{rw:?} in {len}: {r:?}");
            if let Err(crate::measure::MeasureError::Bad { why, fix }) = r {
                assert!(
                    why.contains("pieces of 4 MiB") && fix.contains("256 GiB"),
                    "{why} / {fix}"
                );
            }
        }
        let o = options(Rw::RandRw, 4096, (0, most));
        assert_eq!(pieces(&o).len() as u64, MAX_PIECES);
    }
}
