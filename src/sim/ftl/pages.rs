//! Page-mapped flash with spare blocks (a `page_mapped` card, or the FAT
//! area of an AU-mapped one): any page goes anywhere, the old copy of a
//! page rewritten turns stale, and when free blocks run out, garbage
//! collection empties the block with the fewest valid pages (greedy) by
//! copying them, then erases it. Under uniform random writes this lands a
//! few percent below Desnoyers' closed form for cleaning in order of age
//! (SYSTOR 2012; `docs/notes/trace-formats.md`), the test below.
//!
//! Memory follows what the host wrote, never the capacity: the map is made
//! in chunks of [`CHUNK`] pages as they are first written, and blocks when
//! first filled. About 8 bytes a page written: 4 in the map (the page's
//! slot) and 4 in its block (the slot's page); `examples/sim_memory.rs`
//! measures it.

use super::wear::{NumberMap, STATIC_SPREAD, pick};
use crate::sim::params::{WearLeveling, raw_blocks};

/// No logical page: the slot is stale. Params::validate keeps every
/// logical page and raw slot number under it.
const STALE: u32 = u32::MAX;

/// Pages of the map made at once: 16 KiB of it.
const CHUNK: u64 = 4096;

#[derive(Debug, Clone)]
struct Block {
    /// The logical page in each programmed slot, or [`STALE`].
    slots: Vec<u32>,
    valid: u64,
    erases: u64,
}

/// What making room for one page cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Collected {
    pub copies: u64,
    pub erases: u64,
    /// Blocks emptied.
    pub blocks: u64,
}

/// One page-mapped region: its logical pages, and the raw blocks behind them.
#[derive(Debug, Clone)]
pub struct Pages {
    pages_per_block: u64,
    raw_blocks: u64,
    /// Logical page to its raw slot (block x pages per block + slot) plus
    /// one, 0 where never written, in chunks of [`CHUNK`] pages.
    map: NumberMap<Box<[u32]>>,
    blocks: Vec<Block>,
    free: Vec<u64>,
    active: Option<u32>,
}

impl Pages {
    /// A region of `logical_blocks` erase blocks of `pages_per_block`
    /// pages, with `spare` of its raw flash beyond them. Params::validate
    /// has checked that this leaves two blocks at least beyond the logical
    /// ones (one to write while collecting, one to collect into) and that
    /// every raw slot is numbered under [`STALE`].
    pub fn new(logical_blocks: u64, pages_per_block: u64, spare: f64) -> Pages {
        Pages {
            pages_per_block,
            raw_blocks: raw_blocks(logical_blocks, spare),
            map: NumberMap::default(),
            blocks: Vec::new(),
            free: Vec::new(),
            active: None,
        }
    }

    /// Write logical page `page`: the old copy turns stale, and the page
    /// goes to the active block, after collecting where none is free.
    pub fn write(&mut self, page: u64, policy: WearLeveling) -> Collected {
        if let Some(at) = self.slot_of(page) {
            let block = &mut self.blocks[(at / self.pages_per_block) as usize];
            block.slots[(at % self.pages_per_block) as usize] = STALE;
            block.valid -= 1;
        }
        let mut done = Collected::default();
        let b = self.room(policy, &mut done);
        self.append(b, page as u32);
        done
    }

    /// Discard logical page `page`: its copy turns stale and it is mapped
    /// nowhere, so collection no longer copies it.
    pub fn trim(&mut self, page: u64) {
        let Some(at) = self.slot_of(page) else { return };
        let block = &mut self.blocks[(at / self.pages_per_block) as usize];
        block.slots[(at % self.pages_per_block) as usize] = STALE;
        block.valid -= 1;
        if let Some(chunk) = self.map.get_mut(&(page / CHUNK)) {
            chunk[(page % CHUNK) as usize] = 0;
        }
    }

    /// The erase count of every block made so far.
    pub fn erase_counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks.iter().map(|b| b.erases)
    }

    /// Where logical `page` is: its raw slot number.
    fn slot_of(&self, page: u64) -> Option<u64> {
        let chunk = self.map.get(&(page / CHUNK))?;
        chunk[(page % CHUNK) as usize].checked_sub(1).map(u64::from)
    }

    fn append(&mut self, b: u32, page: u32) {
        let block = &mut self.blocks[b as usize];
        let at = u64::from(b) * self.pages_per_block + block.slots.len() as u64;
        block.slots.push(page);
        block.valid += 1;
        let chunk = self
            .map
            .entry(u64::from(page) / CHUNK)
            .or_insert_with(|| vec![0; CHUNK as usize].into_boxed_slice());
        chunk[(u64::from(page) % CHUNK) as usize] = at as u32 + 1;
    }

    fn has_room(&self, b: u32) -> bool {
        (self.blocks[b as usize].slots.len() as u64) < self.pages_per_block
    }

    /// Free blocks, counting those not made yet.
    fn available(&self) -> u64 {
        self.free.len() as u64 + (self.raw_blocks - self.blocks.len() as u64)
    }

    fn take(&mut self, policy: WearLeveling) -> u32 {
        if self.free.is_empty() {
            self.blocks.push(Block {
                slots: Vec::with_capacity(self.pages_per_block as usize),
                valid: 0,
                erases: 0,
            });
            return (self.blocks.len() - 1) as u32;
        }
        let blocks = &self.blocks;
        let i = pick(policy, &self.free, |b| blocks[b as usize].erases);
        self.free.remove(i) as u32
    }

    /// The full block to collect: the one with the fewest valid pages
    /// (greedy); under static wear levelling, the least worn once the
    /// spread passes [`STATIC_SPREAD`], so its cold data moves and the
    /// block takes its share of erases.
    fn victim(&self, policy: WearLeveling) -> u32 {
        let full = || (0..self.blocks.len() as u32).filter(|&b| !self.has_room(b));
        let erases = |b: u32| self.blocks[b as usize].erases;
        if policy == WearLeveling::Static {
            let most = self.blocks.iter().map(|b| b.erases).max().unwrap_or(0);
            if let Some(cold) = full().min_by_key(|&b| (erases(b), self.blocks[b as usize].valid))
                && most - erases(cold) > STATIC_SPREAD
            {
                return cold;
            }
        }
        full()
            .min_by_key(|&b| self.blocks[b as usize].valid)
            .expect("every block but the one kept back is full")
    }

    /// The block the next page goes to. One free block is always kept back
    /// to collect into: when it is the last, the full block with the fewest
    /// valid pages is copied into it and erased.
    fn room(&mut self, policy: WearLeveling, done: &mut Collected) -> u32 {
        loop {
            if let Some(b) = self.active.filter(|&b| self.has_room(b)) {
                return b;
            }
            if self.available() > 1 {
                self.active = Some(self.take(policy));
                continue;
            }
            let victim = self.victim(policy);
            let into = self.take(policy);
            self.active = Some(into);
            let fresh = Vec::with_capacity(self.pages_per_block as usize);
            let moved = std::mem::replace(&mut self.blocks[victim as usize].slots, fresh);
            for page in moved.into_iter().filter(|&p| p != STALE) {
                self.append(into, page);
                done.copies += 1;
            }
            let v = &mut self.blocks[victim as usize];
            v.valid = 0;
            v.erases += 1;
            self.free.push(u64::from(victim));
            done.erases += 1;
            done.blocks += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Pages {
        fn mapped(&self) -> usize {
            self.map.values().map(|c| c.iter().filter(|&&at| at > 0).count()).sum()
        }

        /// Every written page is in exactly one slot, the one the map
        /// names; each block's valid count is its live slots; no block
        /// holds more than a block's pages; the raw blocks are never
        /// exceeded.
        fn check(&self) -> Result<(), String> {
            let mut live = 0;
            for (b, block) in self.blocks.iter().enumerate() {
                let here = block.slots.iter().filter(|&&p| p != STALE).count() as u64;
                if here != block.valid {
                    return Err(format!("block {b}: {here} live slots, valid says {}", block.valid));
                }
                if block.slots.len() as u64 > self.pages_per_block {
                    return Err(format!("block {b} overfull"));
                }
                live += here;
            }
            if live != self.mapped() as u64 {
                return Err(format!("{live} live slots for {} mapped pages", self.mapped()));
            }
            for (&c, chunk) in &self.map {
                for (i, &at) in chunk.iter().enumerate() {
                    let Some(at) = u64::from(at).checked_sub(1) else {
                        continue;
                    };
                    let page = c * CHUNK + i as u64;
                    let slot =
                        self.blocks[(at / self.pages_per_block) as usize].slots[(at % self.pages_per_block) as usize];
                    if u64::from(slot) != page {
                        return Err(format!("page {page} mapped to a slot that holds another"));
                    }
                }
            }
            if self.blocks.len() as u64 > self.raw_blocks {
                return Err("more blocks than the raw flash has".into());
            }
            Ok(())
        }
    }

    proptest::proptest! {
        /// Whatever the order of writes and the policy, no page is lost or
        /// doubled, and every copy and erase is counted.
        #[test]
        fn collection_never_loses_or_doubles_a_page(
            writes in proptest::collection::vec(0u64..96, 1..2000),
            spare in 0.05f64..0.5,
            policy in 0usize..3,
        ) {
            let policy = [WearLeveling::None, WearLeveling::Dynamic, WearLeveling::Static][policy];
            // 12 logical blocks of 8 pages: 96 pages.
            let mut p = Pages::new(12, 8, spare);
            proptest::prop_assume!(p.raw_blocks >= 14);
            let (mut copies, mut erases) = (0, 0);
            for &w in &writes {
                let done = p.write(w, policy);
                copies += done.copies;
                erases += done.erases;
                proptest::prop_assert_eq!(p.check(), Ok(()));
            }
            let distinct: std::collections::BTreeSet<u64> = writes.iter().copied().collect();
            proptest::prop_assert_eq!(p.mapped(), distinct.len());
            proptest::prop_assert_eq!(p.erase_counts().sum::<u64>(), erases);
            // Every page programmed is a host write or a copy, and sits in a
            // slot of a block, or was erased with one.
            let programmed: u64 = p.blocks.iter().map(|b| b.slots.len() as u64).sum::<u64>()
                + erases * 8;
            proptest::prop_assert_eq!(programmed, writes.len() as u64 + copies);
        }
    }
}
