//! What a run wrote, known again where it should not be: a range's
//! original read back holding a block this run wrote at another address.
//!
//! A range is journalled at its first write, from what the target holds
//! then. On a fake card that wraps addresses, two ranges can be the same
//! bytes: the second one's "original" is then the first one's test data,
//! and the restore, writing records in their order, puts that data back
//! last (an emulated 32 MiB card that said 256 MiB lost its bytes so to
//! bench's 64 MiB area). Seen here, the write that would journal it is
//! refused and the run ends, its journal holding true originals alone.
//!
//! One block is kept a write, by a 64-bit hash with where it was written:
//! the first whole 4 KiB block of the request, where it is not one byte
//! repeated and differs from the original at its place (so a step that
//! writes the bytes already there, or a card's copies of one block, never
//! raise it). A block found again is only a suspicion, since an earlier
//! run with `--no-preserve` leaves the same data (bench's streams and the
//! tests' pattern are the same every run): the preserving target then
//! writes other bytes where the block was written and reads the range
//! again, and only a range that changed with it is the same bytes.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};

/// The block a write is known by: 4 KiB, the page of most cards and the
/// block of most filesystems, so a wrap at any size a card is made in
/// keeps it whole and aligned.
pub(super) const BLOCK: u64 = 4096;

/// Most blocks kept: 512 KiB of hashes. A test writes from one buffer
/// (bench a queue's worth, capacity a tag per block), and past this the
/// run is only less watched, never refused by mistake.
const MOST: usize = 1 << 16;

#[derive(Debug, Default)]
pub(super) struct Written {
    /// Each kept block's hash, and the device offset it was written at.
    seen: HashMap<u64, u64>,
}

/// The first whole [`BLOCK`] of `len` bytes at `at`, as its offset.
pub(super) fn first_block(at: u64, len: u64) -> Option<u64> {
    let b = at.div_ceil(BLOCK) * BLOCK;
    (b + BLOCK <= at + len).then_some(b)
}

fn uniform(block: &[u8]) -> bool {
    block
        .split_first()
        .is_none_or(|(&b, rest)| rest.iter().all(|&x| x == b))
}

fn hash(block: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(block);
    h.finish()
}

impl Written {
    /// Keep `block`, one [`BLOCK`] a write gave other bytes than its
    /// original at device offset `at`, unless it is one byte repeated.
    pub(super) fn note(&mut self, block: &[u8], at: u64) {
        if self.seen.len() < MOST && !uniform(block) {
            self.seen.entry(hash(block)).or_insert(at);
        }
    }

    /// Where `data`, read at device offset `at`, holds a whole [`BLOCK`]
    /// this run wrote (at another address: its own were journalled before
    /// it was written), and where it was written.
    pub(super) fn found_in(&self, at: u64, data: &[u8]) -> Option<(u64, u64)> {
        if self.seen.is_empty() {
            return None;
        }
        let mut b = first_block(at, data.len() as u64)?;
        while b + BLOCK <= at + data.len() as u64 {
            let block = &data[(b - at) as usize..(b - at + BLOCK) as usize];
            if let Some(&written) = (!uniform(block)).then(|| self.seen.get(&hash(block))).flatten() {
                return Some((b, written));
            }
            b += BLOCK;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_block_is_found_at_any_aligned_place_and_a_uniform_one_never() {
        let mut w = Written::default();
        let data: Vec<u8> = (0..3 * BLOCK).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(w.found_in(0, &data), None, "nothing written yet");
        w.note(&data[BLOCK as usize..2 * BLOCK as usize], 8 * BLOCK);
        w.note(&[0u8; BLOCK as usize], 9 * BLOCK);
        assert_eq!(w.seen.len(), 1, "a block of one byte is not kept");
        // Read back at another address, 4 KiB aligned: found where it lies,
        // with where it was written.
        assert_eq!(w.found_in(1 << 20, &data), Some(((1 << 20) + BLOCK, 8 * BLOCK)));
        assert_eq!(w.found_in(0, &[0u8; 8192]), None);
        // Read from an unaligned start, its blocks counted from the first
        // boundary: the block no longer aligned is not seen.
        assert_eq!(first_block(512, 4096), None);
        assert_eq!(first_block(512, 8192), Some(4096));
        assert_eq!(w.found_in(512, &data[..2 * BLOCK as usize]), None);
    }
}
