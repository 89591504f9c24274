//! The characterisation tests of docs/DESIGN.md: each drives a
//! [`Target`](crate::targets::Target), never reads a clock, and interprets
//! its own numbers, so the same code measures a real card and runs
//! deterministically on a simulated one. Each test has its own folder (its
//! measurement, its arguments and steps, how it shows), listed once in
//! the table below; [`registry`] says what a test provides. A measurement
//! is a [`Test`]: a plan (the ranges it will write) and a run in a [`Cx`];
//! the runner above hands a writing test only the preserving target for its
//! plan, through the [`registry::Session`] a test's steps run in.

pub mod advice;
pub mod align;
pub mod au;
pub mod bench;
pub mod blocksize;
pub mod capacity;
pub mod claim;
pub mod confidence;
pub mod fat;
pub mod life;
pub mod metrics;
pub mod note;
pub mod open_au;
pub mod page;
pub mod registry;
#[cfg(test)]
pub(crate) mod said;
pub mod scatter;
pub mod session;
pub mod show;
pub mod slot_writer;
pub mod summary;
pub mod topic;

use serde::Serialize;

use crate::safety::SafetyError;
use crate::safety::ranges::Range;
use crate::targets::{Target, TargetDescription, TargetError};
use crate::units::Iec;
pub use registry::Slot;

// The one table of measuring tests (see [`registry`] for why it lives
// here), each with whether it writes (its `Args` then take consent). The
// order is the summary's reading order: is it genuine, how fast, then its
// geometry.
registry::registry! {
    capacity: capacity::Args as Capacity, writes;
    bench: bench::Args as Bench, writes;
    align: align::Args as Align, reads;
    scatter: scatter::Args as Scatter, reads;
    au: au::Args as Au, writes;
    page: page::Args as Page, writes;
    open_au: open_au::Args as OpenAu, writes;
    fat: fat::Args as Fat, writes;
    blocksize: blocksize::Args as Blocksize, reads;
}

/// Where a test says how far it is: `done` of `total` units of its own
/// (bytes, requests, sweep steps), between batches, never per request. The
/// runner shows it (a bar with an ETA on a terminal); tests never reach a
/// global.
pub trait Progress {
    fn advance(&self, done: u64, total: u64);

    /// How far in device time: `spent_ns` since the step began and the
    /// test's own estimate of what is left, for a step whose units cost
    /// unlike amounts (open-au: one count past the card's limit merges on
    /// every visit and costs as much as all the counts before it). The bar
    /// only moves forward; the ETA is the estimate, at the step's pace.
    fn timed(&self, spent_ns: u64, left_ns: u64) {
        self.advance(spent_ns, spent_ns.saturating_add(left_ns));
    }
}

/// How far a step's estimate of what is left leans from the least it can
/// still cost toward the most, where what decides between them (open-au's
/// limit, align's sureness) shows only as it comes: on the simulated cards
/// of open-au's `the_estimate_left_stays_near_the_truth` 0.5 gave the worst
/// estimate 3.13x (demo, whose random limit of 24 lies near the top of its
/// 32), 0.6 gave 2.61x (demo) and 2.21x (kingston-sa04g, limit 3), 0.67
/// gave 2.46x (kingston).
const TOWARD_MOST: f64 = 0.6;

/// The estimate between `least` and `most` (a weighted geometric mean, off
/// by a bounded factor wherever the truth lies between them).
pub fn left_between(least: f64, most: f64) -> f64 {
    least.max(0.0).powf(1.0 - TOWARD_MOST) * most.max(0.0).powf(TOWARD_MOST)
}

/// Device ns left of a step that doubles its samples each round until it
/// is sure (align, page), at `have` of at most `most` samples with
/// `spent_ns` spent: the least is one round more, which costs what all
/// before it did, the most every round up to `most`.
pub fn doubling_left(spent_ns: u64, have: usize, most: usize) -> u64 {
    let per = spent_ns as f64 / have.max(1) as f64;
    left_between(have as f64 * per, most.saturating_sub(have) as f64 * per) as u64
}

/// No progress shown (the unit tests, the property tests).
impl Progress for () {
    fn advance(&self, _: u64, _: u64) {}
}

/// What a test runs with: the target (read-only, or the preserving target
/// of its plan), where to say how far it is, and whether to stop (Ctrl-C,
/// SIGTERM: a long read-only test stops at its next batch; a writing test's
/// next write is refused by the preserving target anyway).
pub struct Cx<'a> {
    pub target: &'a mut dyn Target,
    pub progress: &'a dyn Progress,
    pub cancelled: &'a dyn Fn() -> Option<i32>,
    /// Device-ns a writing test may take (`--budget`, default
    /// [`STEP_BUDGET_S`]); past it, it stops and says it is unsure.
    pub budget_ns: u64,
}

impl Cx<'_> {
    /// Stop here when asked to: the signal as the error that carries it.
    pub fn check(&self) -> Result<(), MeasureError> {
        match (self.cancelled)() {
            Some(signal) => Err(MeasureError::Target(TargetError::Interrupted { signal })),
            None => Ok(()),
        }
    }
}

/// Run `test` on `target` as the runner would without a journal: its plan
/// enforced by a preserving target when it writes, no progress shown, never
/// cancelled. For tests of the tests.
pub fn run_alone<T: Test>(test: &T, target: &mut dyn Target) -> Result<T::Output, MeasureError> {
    let ranges = test.plan(target.description())?;
    let never = || None;
    if ranges.is_empty() {
        let mut cx = Cx {
            target,
            progress: &(),
            cancelled: &never,
            budget_ns: budget_ns(None),
        };
        return test.run(&mut cx);
    }
    let mut p = crate::safety::PreservingTarget::in_memory(Box::new(target), ranges)?;
    let mut cx = Cx {
        target: &mut p,
        progress: &(),
        cancelled: &never,
        budget_ns: budget_ns(None),
    };
    test.run(&mut cx)
}

/// A characterisation test. The runner asks for its plan before any I/O,
/// journals and enforces the planned ranges, runs it, and has it record its
/// result in the run's [`Results`].
pub trait Test {
    /// Its name in progress lines and notes (`align`, `open_au`).
    const KEY: &'static str;
    type Output: Serialize + Clone;
    /// The byte ranges it will write on a target like `d`, checked before any
    /// I/O; empty for a read-only test.
    fn plan(&self, d: &TargetDescription) -> Result<Vec<Range>, MeasureError>;
    fn run(&self, cx: &mut Cx<'_>) -> Result<Self::Output, MeasureError>;
    /// Put the result where it belongs: its own field of the results (a
    /// capacity stage puts nothing; the command records the verdict).
    fn record(out: &Self::Output, results: &mut Results);
}

/// What lies under the target, as far as flash verdicts go. Identification
/// fills it in (the tests themselves never learn what they drive); a test
/// given a medium that cannot show flash geometry measures as usual and
/// reports what it saw, but claims no erase block, open-AU limit or FAT area.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Medium {
    /// Why no flash behaviour can show through this target; None when it
    /// may be flash (a card reader, an eMMC, an SSD, a simulated card).
    pub not_flash: Option<String>,
}

impl Medium {
    /// From what `info` found: a regular file, a loop device, memory and
    /// layered or virtual disks put something between the reads and any flash.
    /// A loop device served by `flashlab emulate` is a card: the emulation
    /// answers each request when its card model says, so its timing is a
    /// card's (only whether it is one is read here, never which card).
    pub fn of(info: &crate::identify::DeviceInfo) -> Medium {
        use crate::identify::Transport;
        let why = match info.transport {
            Transport::Loop if info.emulated.is_some() => None,
            Transport::File => Some(
                "a regular file: its timing comes from the filesystem's extents and caches, not from flash".to_string(),
            ),
            Transport::Loop => Some(match &info.related.loop_backing_file {
                Some(f) => format!("a loop device over the file {f}: the file's filesystem, not flash, sets its timing"),
                None => "a loop device: the file behind it, not flash, sets its timing".to_string(),
            }),
            Transport::Zram | Transport::Ram => Some("a RAM disk: memory has no erase blocks".to_string()),
            Transport::Dm | Transport::Md => Some(
                "a device-mapper or RAID layer: it remaps the disks below, so their geometry does not show at its offsets"
                    .to_string(),
            ),
            Transport::Virtio | Transport::Nbd => Some("a virtual or network disk: the storage behind it is not reached directly".to_string()),
            Transport::Mmc | Transport::Usb | Transport::Nvme | Transport::Scsi | Transport::Sim | Transport::Unknown => {
                None
            }
        };
        Medium { not_flash: why }
    }
}

/// A write buffer of `len` bytes holding the tests' fixed data: a
/// non-uniform pattern, so a card that compresses or deduplicates gains
/// nothing (bench writes a seeded stream instead, as fio does).
pub fn test_data(len: u64) -> Result<crate::targets::AlignedBuf, MeasureError> {
    let mut buf = buffer(len)?;
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        // Below 251: fits a byte.
        *b = (i.wrapping_mul(131) % 251) as u8;
    }
    Ok(buf)
}

/// The confidence from which a verdict is stated as a fact and acted on
/// (advice, the summary); below it the verdict is shown as unsure.
pub const CONFIDENT: f64 = 0.9;

/// The erase size probe states: au's writes' confident answer stands
/// (unsure where align's reads confidently said otherwise); without one,
/// the reads'. It combines two tests' results, so it is neither's: in au,
/// au would name align's result while align's summary line names au.
pub fn best_erase(align: &align::AlignResult, au: Option<&au::AuResult>) -> (Option<u64>, f64) {
    reads_and_writes(
        (align.erase_size_bytes, align.confidence),
        au.map(|w| (w.erase_size_bytes, w.confidence)),
    )
}

/// The page size probe states. page's writes measure it directly (a second
/// page programmed), so their confident answer stands; where align's reads
/// confidently said otherwise, it stands unsure. Without one, the reads'.
/// Neither page's nor align's: page's steps run align and align's summary
/// line shows this, so in either the two folders would use each other.
pub fn best_page(align: &align::AlignResult, page: Option<&page::PageResult>) -> (Option<u64>, f64) {
    reads_and_writes(
        (align.page_size_bytes, align.page_confidence),
        page.map(|w| (w.page_size_bytes, w.confidence)),
    )
}

/// One size measured by reads and by writes (erase block, page), as probe
/// states it. The writes measure it directly (a slot overflowing, a second
/// page programmed), so their confident answer stands: surer where the reads
/// agree, unsure (0.5) where the reads confidently said otherwise. Without
/// one, whichever is surer.
pub fn reads_and_writes(reads: (Option<u64>, f64), writes: Option<(Option<u64>, f64)>) -> (Option<u64>, f64) {
    match writes {
        Some((Some(w), c)) if c >= CONFIDENT => {
            let c = if reads.0 == Some(w) {
                c.max(reads.1)
            } else if reads.1 >= CONFIDENT {
                0.5
            } else {
                c
            };
            (Some(w), c)
        }
        Some((Some(w), c)) if c > reads.1 => (Some(w), c),
        _ => reads,
    }
}

/// Largest erase size a test accepts. SD allocation units stop at 64 MiB (SD
/// Physical Layer spec 4.10.2, AU_SIZE) and eMMC high-capacity erase groups
/// at 32 MiB x 2^n in practice; a test allocates a buffer of the erase size,
/// so the bound is checked before anything else.
pub const MAX_ERASE: u64 = 1 << 30;

/// The most bytes a test allocates for one buffer from sizes a user chose
/// (bench's --bs times --qd, scatter's --block): the largest erase size a
/// test accepts, which open-au holds in one buffer.
pub const MAX_BUFFER: u64 = MAX_ERASE;

/// A buffer of `len` bytes, refused (not cut short, not an out-of-memory
/// abort) beyond [`MAX_BUFFER`]. Callers check their own options first and
/// name them; this is the last line.
/// Write `len` bytes at each of `offsets` with the bytes they hold (all read
/// first, in one batch, then written one after another as the timed
/// writes), and return each write's latency in ns. For tests that time
/// writes and care nothing for their contents (open-au, fat, au): the card
/// does the same work for any bytes, and a chunk whose bytes did not change
/// is not written back afterwards, which on a card of 128 MiB AUs saves a
/// merge per AU touched (seconds each).
pub fn rewrite(t: &mut dyn Target, offsets: &[u64], len: u64) -> Result<Vec<f64>, MeasureError> {
    Ok(rewrite_timed(t, offsets, len)?.writes)
}

/// What [`rewrite_timed`] timed: each read's and each write's ns, in the
/// order of the offsets.
pub struct Rewritten {
    pub reads: Vec<f64>,
    pub writes: Vec<f64>,
}

/// [`rewrite`], with the reads' latencies too: a read just before its
/// write is the path's control, as a card merges on writes, not on reads,
/// while a stall of the path (a loaded machine, a late emulation) slows
/// both (open-au's `judge_again`).
pub fn rewrite_timed(t: &mut dyn Target, offsets: &[u64], len: u64) -> Result<Rewritten, MeasureError> {
    let n = request_len(len, "--chunk")?;
    let mut buf = buffer(len.saturating_mul(offsets.len() as u64))?;
    let at = |i: usize| i * n as usize;
    // Each offset's chunk, read (or written) from its own place in `buf`.
    let all = |op: fn(u64, u32, usize) -> crate::targets::Request| -> Vec<crate::targets::Request> {
        offsets.iter().enumerate().map(|(i, &o)| op(o, n, at(i))).collect()
    };
    let read = crate::targets::run_all(t, &all(crate::targets::Request::read), 1, &mut buf)?;
    let written = crate::targets::run_all(t, &all(crate::targets::Request::write), 1, &mut buf)?;
    let ns = |c: &[crate::targets::Completion]| c.iter().map(|c| c.duration_ns as f64).collect();
    Ok(Rewritten {
        reads: ns(&read),
        writes: ns(&written),
    })
}

/// Device-seconds a writing step may take by default: a card pays device
/// time in real time, and a step of more than four minutes loses a user
/// waiting on it (the goal for hard cards: each step at most 4 device-minutes, a
/// probe at most 10). Three for the measurement leaves one for reading the
/// originals and writing back what changed.
pub const STEP_BUDGET_S: f64 = 180.0;

/// A step's budget in device-nanoseconds: `--budget SECONDS` or
/// [`STEP_BUDGET_S`].
pub fn budget_ns(seconds: Option<f64>) -> u64 {
    (seconds.unwrap_or(STEP_BUDGET_S).clamp(0.0, 1e9) * 1e9) as u64
}

pub fn buffer(len: u64) -> Result<crate::targets::AlignedBuf, MeasureError> {
    match usize::try_from(len) {
        Ok(n) if len <= MAX_BUFFER => Ok(crate::targets::AlignedBuf::new(n)),
        _ => Err(MeasureError::Bad {
            why: format!(
                "a buffer of {} is more than flashlab allocates ({})",
                Iec(len),
                Iec(MAX_BUFFER)
            ),
            fix: "choose smaller sizes (--bs, --block, --erase-size, --chunk)".into(),
        }),
    }
}

/// A request's length from a size a user chose, refused with `option`
/// named instead of cut to 32 bits (`scatter --block 4G` once read 0 bytes).
pub fn request_len(n: u64, option: &str) -> Result<u32, MeasureError> {
    u32::try_from(n)
        .ok()
        .filter(|&l| u64::from(l) <= MAX_BUFFER)
        .ok_or_else(|| MeasureError::Bad {
            why: format!(
                "{option} {} is larger than one request can be ({})",
                Iec(n),
                Iec(MAX_BUFFER)
            ),
            fix: format!("give a smaller {option}"),
        })
}

/// The checks every writing test's plan starts with: an erase size a buffer
/// can hold, a chunk that splits it at least twice, and a count of AUs from 1
/// to `max_allowed`.
fn check_plan(erase: u64, chunk: u64, max: u64, max_allowed: u64) -> Result<(), MeasureError> {
    if erase > MAX_ERASE {
        return Err(MeasureError::Bad {
            why: format!(
                "the erase size ({}) is larger than any flash erase block (at most {})",
                Iec(erase),
                Iec(MAX_ERASE)
            ),
            fix: "give --erase-size as the card's AU, e.g. 4M".into(),
        });
    }
    if erase == 0 || chunk == 0 || !erase.is_multiple_of(chunk) || erase / chunk < 2 {
        return Err(MeasureError::Bad {
            why: format!("the chunk ({chunk} bytes) must divide the erase size ({erase} bytes) at least twice"),
            fix: "choose --chunk as a power of two at most half the erase size (or leave it out)".into(),
        });
    }
    if max == 0 || max > max_allowed {
        return Err(MeasureError::Bad {
            why: format!("--max must be between 1 and {max_allowed}, not {max}"),
            fix: format!("give --max between 1 and {max_allowed}"),
        });
    }
    Ok(())
}

/// The erase size and the chunk in whole logical blocks of the target: a
/// write of part of a block is refused by every target.
fn check_blocks(erase: u64, chunk: u64, d: &TargetDescription) -> Result<(), MeasureError> {
    let b = u64::from(d.logical_block_size.max(1));
    if !erase.is_multiple_of(b) || !chunk.is_multiple_of(b) {
        return Err(MeasureError::Bad {
            why: format!(
                "the erase size ({erase}) and the chunk ({chunk}) must be multiples of the {b}-byte logical block"
            ),
            fix: format!("give --erase-size (and --chunk) as multiples of {b} bytes"),
        });
    }
    Ok(())
}

/// Why a test could not run.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("{0}")]
    Target(#[from] TargetError),
    #[error("{0}")]
    Safety(#[from] SafetyError),
    #[error(
        "{what} needs {} from offset {} but the target ends at {}; offsets never wrap",
        Iec(*need), Iec(*from), Iec(*size)
    )]
    DoesNotFit {
        what: String,
        from: u64,
        need: u64,
        size: u64,
        /// What the user can change, in the words of the test's own options.
        fix: String,
    },
    /// A broken invariant of flashlab itself.
    #[error("internal: {0}")]
    Internal(String),
    /// Options that cannot work on this target; `fix` says which to change.
    #[error("{why}")]
    Bad { why: String, fix: String },
}

/// Median of a sample (mean of the middle two for even counts); 0 for none.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Median absolute deviation scaled to a normal sigma (1.4826 x MAD).
pub fn robust_sigma(v: &[f64]) -> f64 {
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&dev)
}

/// Interquartile range (spread kept in results, like fio's percentiles).
pub fn iqr(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let q = |f: f64| s[((s.len() - 1) as f64 * f).round() as usize];
    q(0.75) - q(0.25)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_outrank_reads_and_a_confident_disagreement_is_unsure() {
        let four = Some(4u64 << 20);
        let two = Some(2u64 << 20);
        // Agreement: the surer of the two.
        assert_eq!(reads_and_writes((four, 1.0), Some((four, 0.95))), (four, 1.0));
        // Confident writes over unsure reads.
        assert_eq!(reads_and_writes((two, 0.3), Some((four, 0.95))), (four, 0.95));
        // Both confident, different: the writes' size, unsure.
        assert_eq!(reads_and_writes((two, 1.0), Some((four, 0.95))), (four, 0.5));
        // Unsure writes only where they are surer than the reads.
        assert_eq!(reads_and_writes((two, 0.2), Some((four, 0.3))), (four, 0.3));
        assert_eq!(reads_and_writes((two, 0.95), Some((four, 0.5))), (two, 0.95));
        // No answer from the writes, or no writes: the reads.
        assert_eq!(reads_and_writes((two, 0.95), Some((None, 0.3))), (two, 0.95));
        assert_eq!(reads_and_writes((None, 0.1), None), (None, 0.1));
    }

    /// A doubling step at 16 of 256 samples after 1 ms: one round more
    /// costs 1 ms, every round to the last 15 ms; the estimate leans to the
    /// most. At the last round nothing is left.
    #[test]
    fn a_doubling_step_is_priced_between_one_round_and_all() {
        assert_eq!(doubling_left(1_000_000, 16, 256), 5_077_556);
        assert_eq!(doubling_left(1_000_000, 256, 256), 0);
        assert_eq!(doubling_left(0, 0, 256), 0);
        assert_eq!(left_between(4.0, 4.0).round(), 4.0);
    }

    #[test]
    fn robust_statistics() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        // One outlier does not move the robust spread.
        let v = [10.0, 11.0, 9.0, 10.0, 1000.0];
        assert!((robust_sigma(&v) - 1.4826).abs() < 1e-9);
        assert_eq!(iqr(&[1.0, 2.0, 3.0, 4.0, 5.0]), 2.0);
    }
}
