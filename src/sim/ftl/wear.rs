//! Where erases land: the erase count of every physical block, and which
//! free block takes new data (`wear_leveling`). A block's erase count over
//! its rated cycles is what wears a card out, so `life` reads the spread,
//! not only the total.

use std::collections::HashMap;

use crate::sim::params::WearLeveling;

/// Which of the `free` blocks takes new data: an index into `free`. With
/// no wear levelling, the one freed last (a stack); with dynamic wear
/// levelling, the one erased least (the one freed last among equals, so
/// both start alike).
pub(super) fn pick(policy: WearLeveling, free: &[u64], erases: impl Fn(u64) -> u64) -> usize {
    let last = free.len() - 1;
    match policy {
        WearLeveling::None => last,
        WearLeveling::Dynamic => (0..free.len()).rev().min_by_key(|&i| erases(free[i])).unwrap_or(last),
    }
}

/// The physical blocks behind an AU-mapped card: each AU's data block, the
/// spare blocks its logs and merges take, and every block's erase count.
/// Sparse: an AU never merged keeps block number = AU number and costs no
/// memory, so a card of any size starts empty.
#[derive(Debug, Clone, Default)]
pub struct Blocks {
    /// An AU's data block, where a merge moved it.
    home: HashMap<u64, u64>,
    /// Free blocks, the last freed last; made on first use.
    free: Option<Vec<u64>>,
    erases: HashMap<u64, u64>,
}

impl Blocks {
    /// AU `au` was merged or switched: its data now sits in a free block
    /// (the policy's pick), and its old data block is erased and free.
    /// `aus` and `spare` (spare blocks: a log per open AU and one to merge
    /// into) size the pool the first time.
    pub(super) fn moved(&mut self, au: u64, aus: u64, spare: u64, policy: WearLeveling) {
        let erases = &self.erases;
        let free = self.free.get_or_insert_with(|| (aus..aus + spare.max(1)).collect());
        let i = pick(policy, free, |b| erases.get(&b).copied().unwrap_or(0));
        let fresh = free.remove(i);
        let old = self.home.insert(au, fresh).unwrap_or(au);
        *self.erases.entry(old).or_insert(0) += 1;
        self.free.get_or_insert_with(Vec::new).push(old);
    }

    /// The erase count of every block erased at least once.
    pub fn erase_counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.erases.values().copied()
    }
}
