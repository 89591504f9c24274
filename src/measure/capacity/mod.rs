//! `capacity`: is the card as large as it says? Fake-capacity detection in
//! the spirit of f3probe (f3's documentation names the kinds: addresses that
//! wrap past the real size, writes past it that are lost, and a small cache
//! that hides either from a write-then-read check).
//!
//! Every logical block written carries its own address and a per-run nonce
//! (then a stream seeded by both), so a block read back from the wrong place
//! names where it came from. A stage writes:
//! - sample blocks across a window of the card (the whole card at first),
//!   highest first;
//! - then a dense region of `push` bytes right after the untouched start,
//!   and past it, up to `flush` bytes in all, blocks written again with the
//!   bytes they hold: both push any write cache out before anything is read
//!   back, and the second needs nothing written back (a 48 MiB
//!   cache outlasted the 32 MiB push and the card was called genuine).
//!   Where a sample read back wrong right after its write, no cache kept
//!   it: nothing past the dense region is written, and of the dense region
//!   only what the read probes need, priced (they come closer together).
//!   Otherwise a canary, the block before the card's last, written after
//!   the samples, ends the flush at half again once it reads back lost.
//!
//! Wrap-around at any modulus N is then seen by reads alone: the read probes,
//! one every `push` bytes over the whole card, include one that lands on the
//! dense region through the wrap (the first probe at or past N + start sits
//! less than `push` bytes past it), and it reads back a tag that names an
//! address N bytes lower. Lost writes are seen at the samples: past N they do
//! not read back. A sample that read back right before the push and wrong
//! after it was kept only by a cache. Later stages narrow the window between
//! the last good and the first bad byte, `SAMPLES` blocks at a time (fewer
//! over a window many AUs wide: `WIDE_SAMPLES`; more over one a few AUs
//! wide, up to `CLOSE_SAMPLES`), until it is covered block by block, so the
//! usable size is found to the logical block.
//!
//! Every stage is its own preserving run: its first write batch touches every
//! range it declared, so the journal takes all the originals before any of
//! them is overwritten, even where a wrapping card maps two of them onto one
//! place; the restore then writes the same snapshot back in any order. The
//! exception is a flush written as it is, chunk by chunk, each chunk
//! journalled at its own write from the read that gives it its bytes
//! (`Target::rewrite`: read once, not again for the journal): the
//! survey's past the dense region, where
//! a chunk that holds a block this run wrote (come there through a wrap)
//! is left alone, so no journal keeps this run's tag as an original; and a
//! narrowing stage's with a canary, where no wrap was seen. A flush cut
//! short reads no more originals than it wrote.

mod boundary;
mod command;
pub mod fill;
mod layout;
mod show;
mod stage;
mod tag;
mod verdict;

pub use boundary::Boundary;
pub use command::{Args, default_push, keeps_no_data, steps};
pub use layout::{SAMPLES, SURVEY_SAMPLES};
pub use show::Presenter;
pub use stage::Stage;
pub use verdict::{
    BadRegion, CapacityResult, FakeKind, MAX_STAGES, Next, Verdict, cache_seen, canary_for, lap, next, thorough_helps,
    verdict,
};

use serde::{Deserialize, Serialize};

use crate::targets::TargetDescription;

/// Bytes of one sample block.
const BLOCK: u64 = 4096;
/// The start left alone by default: the partition table and the first
/// partition's boot sector live there.
pub const DEFAULT_SKIP: u64 = 1 << 20;
/// Dense region, cache push and read-probe spacing: 32 MiB, past the few
/// MiB fake controllers keep in RAM (f3probe's own estimate of such caches
/// is a few MiB); `--push` for more.
pub const DEFAULT_PUSH: u64 = 32 << 20;
/// Bytes written after the samples by default, the dense region included:
/// past a write cache of 64 MiB (the fake-capacity goal asks for caches of at least 64
/// MiB by default; the largest a user met with f3 was 63 MB), with room
/// for the samples themselves.
pub const DEFAULT_FLUSH: u64 = 72 << 20;
/// The same with `--thorough`: past a cache of 1 GiB.
pub const THOROUGH_FLUSH: u64 = (1 << 30) + (64 << 20);

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Bytes at the start never written.
    pub skip: u64,
    /// The dense region and cache push.
    pub push: u64,
    /// Bytes written after the samples, the dense region included; past
    /// it they are written with the bytes already there.
    pub flush: u64,
    /// Tags each run's blocks; a block from an older run is not ours.
    pub nonce: u64,
}

impl Options {
    /// `nonce`: the run's own ([`Session::nonce`](crate::measure::registry::Session::nonce)).
    pub fn new(skip: u64, push: u64, flush: u64, nonce: u64) -> Self {
        Options {
            skip,
            push,
            flush,
            nonce,
        }
    }
}

/// What a bad block read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Evidence {
    /// This run's tag for another address: the card wrapped.
    Foreign {
        from: u64,
    },
    Zeros,
    /// Anything else: old data or garbage.
    Other,
    /// The card refused the read or write.
    IoError,
}

/// One written block, read back.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    pub offset: u64,
    pub len: u64,
    /// Bytes from `offset` that read back right, before the first wrong block.
    pub good: u64,
    /// What the first wrong logical block held.
    pub bad: Option<Evidence>,
    /// Read back right before the cache push (samples only).
    pub before_push: bool,
}

impl Checked {
    fn ok(&self) -> bool {
        self.bad.is_none()
    }

    fn end(&self) -> u64 {
        self.offset + self.len
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageResult {
    pub window: Option<(u64, u64)>,
    pub checked: Vec<Checked>,
    /// Read probes that found this run's tag for another address:
    /// (where read, the address the tag names).
    pub aliases: Vec<(u64, u64)>,
    /// Read probes the card refused, as the regions (offset, length) of
    /// refused reads around them.
    pub probe_errors: Vec<(u64, u64)>,
    pub probes: u64,
    pub bytes_written: u64,
    /// A [`Boundary`] stage: blocks read, none written.
    #[serde(default)]
    pub reads_only: bool,
    /// The stage's canary block, if it wrote one.
    #[serde(default)]
    pub canary: Option<u64>,
    /// Bytes of flush written (the dense region's included).
    #[serde(default)]
    pub flushed: u64,
    /// The stage wrote a canary and the whole flush did not let it go: a
    /// cache may still hold the samples, so their good reads prove nothing.
    #[serde(default)]
    pub unflushed: bool,
    /// Why the survey's flush stopped short of its plan.
    #[serde(default)]
    pub cut: Option<Cut>,
}

/// Why a survey's flush stopped short of its plan: a write cache, if any,
/// had already let the samples go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cut {
    /// A sample read back wrong right after its write: nothing past the
    /// part of the dense region the read probes need was written.
    LostAtOnce,
    /// The canary, written after the samples, read back lost once `after`
    /// bytes of flush were written; the flush went on to half again.
    LetGo { after: u64 },
}

fn block_of(d: &TargetDescription) -> u64 {
    u64::from(d.logical_block_size.max(1))
}

#[cfg(test)]
mod tests;
