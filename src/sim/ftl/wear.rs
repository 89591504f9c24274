//! Where erases land: the erase count of every physical block, and which
//! free block takes new data (`wear_leveling`). A block's erase count over
//! its rated cycles is what wears a card out, so `life` reads the spread,
//! not only the total.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::sim::params::WearLeveling;

/// Which of the `free` blocks takes new data: an index into `free`. With
/// no wear levelling, the one freed last (a stack); with dynamic wear
/// levelling, the one erased least (the one freed last among equals, so
/// both start alike).
pub(super) fn pick(policy: WearLeveling, free: &[u64], erases: impl Fn(u64) -> u64) -> usize {
    let last = free.len() - 1;
    match policy {
        WearLeveling::None => last,
        WearLeveling::Dynamic | WearLeveling::Static => {
            (0..free.len()).rev().min_by_key(|&i| erases(free[i])).unwrap_or(last)
        }
    }
}

/// Static wear levelling moves cold data once the most worn block has this
/// many erases more than the block under the coldest data, so the spread
/// (most minus least) stays near it. A stated choice, not a measurement:
/// no card publishes its threshold; the spread is reported, so its effect
/// can be read.
pub const STATIC_SPREAD: u64 = 32;

/// What static wear levelling did after a move: the pages it copied and
/// the blocks it erased.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Levelled {
    pub copies: u64,
    pub erases: u64,
}

/// A hasher for block and AU numbers: one multiply (Fibonacci hashing),
/// where SipHash made the merge-per-write random-write benchmark run at
/// half its speed (`benches/sim.rs`). Keys are the card's own numbers,
/// never an adversary's, so resistance to collisions is not needed.
#[derive(Debug, Clone, Copy, Default)]
pub struct NumberHasher(u64);

impl Hasher for NumberHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ self.0.rotate_left(5)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by block, AU or page number.
pub type NumberMap<V> = HashMap<u64, V, BuildHasherDefault<NumberHasher>>;

/// The physical blocks behind an AU-mapped card: each AU's data block, the
/// spare blocks its logs and merges take, and every block's erase count.
/// Sparse: an AU never merged keeps block number = AU number and costs no
/// memory, so a card of any size starts empty.
#[derive(Debug, Clone, Default)]
pub struct Blocks {
    /// An AU's data block, where a merge moved it.
    home: NumberMap<u64>,
    /// Free blocks, the last freed last; made on first use.
    free: Option<Vec<u64>>,
    erases: NumberMap<u64>,
    /// The most erases of any block.
    most: u64,
    /// AUs below this have all been moved at least once (where static wear
    /// levelling looks for an AU still on its first block).
    unmoved_from: u64,
}

impl Blocks {
    fn count(&self, block: u64) -> u64 {
        self.erases.get(&block).copied().unwrap_or(0)
    }

    /// Put `au`'s data in the free block the policy picks, erase its old
    /// block and free it.
    /// Cold data (`worn`) goes to the most worn free block instead, which
    /// it then keeps from wearing further.
    fn relocate(&mut self, au: u64, aus: u64, spare: u64, policy: WearLeveling, worn: bool) {
        let erases = &self.erases;
        let free = self.free.get_or_insert_with(|| (aus..aus + spare.max(1)).collect());
        let count = |b: &u64| erases.get(b).copied().unwrap_or(0);
        let i = if worn {
            (0..free.len()).max_by_key(|&i| count(&free[i])).unwrap_or(0)
        } else {
            pick(policy, free, |b| count(&b))
        };
        let fresh = free.remove(i);
        let old = self.home.insert(au, fresh).unwrap_or(au);
        let n = self.erases.entry(old).or_insert(0);
        *n += 1;
        self.most = self.most.max(*n);
        self.free.get_or_insert_with(Vec::new).push(old);
    }

    /// AU `au` was merged or switched: its data now sits in a free block
    /// (the policy's pick), and its old data block is erased and free.
    /// `aus` and `spare` (spare blocks: a log per open AU and one to merge
    /// into) size the pool the first time. Under static wear levelling the
    /// coldest AU's data then moves to the most worn free block where the
    /// spread passes [`STATIC_SPREAD`]:
    /// what that cost, in `pages` per AU, is returned.
    pub(super) fn moved(&mut self, au: u64, aus: u64, spare: u64, policy: WearLeveling, pages: u64) -> Levelled {
        self.relocate(au, aus, spare, policy, false);
        let mut done = Levelled::default();
        // One AU of cold data a move at most: a card levels as it goes,
        // not in one pause that copies the whole card.
        if policy == WearLeveling::Static
            && let Some((cold, n)) = self.coldest(aus)
            && self.most - n > STATIC_SPREAD
        {
            self.relocate(cold, aus, spare, policy, true);
            done.copies += pages;
            done.erases += 1;
        }
        done
    }

    /// The AU whose data block has the fewest erases, and that count: an
    /// AU never moved (still on its first block, never erased) if any.
    fn coldest(&mut self, aus: u64) -> Option<(u64, u64)> {
        while self.unmoved_from < aus && self.home.contains_key(&self.unmoved_from) {
            self.unmoved_from += 1;
        }
        if self.unmoved_from < aus {
            return Some((self.unmoved_from, self.count(self.unmoved_from)));
        }
        self.home
            .iter()
            .map(|(&au, &b)| (au, self.count(b)))
            .min_by_key(|&(au, n)| (n, au))
    }

    /// The erase count of every block erased at least once.
    pub fn erase_counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.erases.values().copied()
    }

    /// Every block erased at least once, by number, with its count.
    pub fn erases_by_block(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.erases.iter().map(|(&b, &n)| (b, n))
    }
}
