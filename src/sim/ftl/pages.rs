//! Page-mapped flash with spare blocks (a `page_mapped` card, or the FAT
//! area of an AU-mapped one): any page goes anywhere, the old copy of a
//! page rewritten turns stale, and when free blocks run out, garbage
//! collection empties the block with the fewest valid pages (greedy) by
//! copying them, then erases it. Under uniform random writes this lands a
//! few percent below Desnoyers' closed form for cleaning in order of age
//! (SYSTOR 2012; `docs/notes/trace-formats.md`), the test below.
//!
//! Memory follows what the host wrote, never the capacity, and stays
//! within `life`'s goal of 4 bytes a page of the card: the map (each
//! page's slot, 3 bytes where every slot number fits, else 4) is made in
//! chunks of [`CHUNK`] pages as they are first written. Which page a slot
//! holds, what collection must know to copy it, is kept only for the
//! blocks it may take next ([`LISTED_SHARE`]) and read back from the map
//! for others when one of them is taken; so the choice of block, and
//! every count, is the same as with a page list for every block.
//! `examples/sim_memory.rs` and `examples/life_speed.rs` measure it.

use super::wear::{NumberMap, STATIC_SPREAD, pick};
use crate::sim::params::{WearLeveling, raw_blocks};

/// Pages of the map made at once: 12 or 16 KiB of it.
const CHUNK: u64 = 4096;

/// Full blocks whose page lists a scan of the map leaves: one in this
/// many of the raw blocks; blocks written since add theirs, up to half as
/// many again before the fullest are dropped. A stated trade, not a
/// measurement: at 1 in 8 the lists take at most 3 x 1.5 / 8 = 0.56
/// bytes a raw page where the map takes 3, so a page stays under 4
/// bytes, and the scans stay rare (`examples/sim_memory.rs` measures
/// both).
const LISTED_SHARE: u64 = 8;

/// Raw pages whose lists are always kept: a region this small (4 GiB of
/// 4 KiB pages; every FAT area) lists every block and never scans, for at
/// most 4 MiB. A larger page-mapped card scans, as the built-in
/// emmc-hs400 (31 GB of 4 KiB pages) does.
const LISTED_PAGES_LEAST: u64 = 1 << 20;

#[derive(Debug, Clone)]
struct Block {
    /// Slots programmed since the block was last erased.
    written: u64,
    valid: u64,
    erases: u64,
    /// The logical page in each programmed slot plus one, 0 where stale,
    /// in [`Pages::width`] bytes each: kept for the block being written
    /// and those collection may take next, None for the rest (the map
    /// knows where their pages are).
    listed: Option<Vec<u8>>,
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
    /// Bytes of the map a page takes: 3 where every raw slot number plus
    /// one fits in 24 bits, else 4.
    width: usize,
    /// Logical page to its raw slot (block x pages per block + slot) plus
    /// one, 0 where never written, little-endian in [`Self::width`] bytes,
    /// in chunks of [`CHUNK`] pages.
    map: NumberMap<Box<[u8]>>,
    blocks: Vec<Block>,
    free: Vec<u64>,
    active: Option<u32>,
    /// Blocks whose page lists a scan leaves; half as many again before
    /// the fullest are dropped. See [`LISTED_SHARE`].
    listed_most: u64,
    /// Blocks with a page list now.
    lists: u64,
    /// Page lists let go, kept to be used again: a list is made for every
    /// block written, and this makes each an allocation once, not once a
    /// block.
    unused: Vec<Vec<u8>>,
    /// Times a block to collect had no page list and the map was scanned.
    scans: u64,
}

impl Pages {
    /// A region of `logical_blocks` erase blocks of `pages_per_block`
    /// pages, with `spare` of its raw flash beyond them. Params::validate
    /// has checked that this leaves two blocks at least beyond the logical
    /// ones (one to write while collecting, one to collect into) and that
    /// every raw slot number plus one fits in a u32.
    pub fn new(logical_blocks: u64, pages_per_block: u64, spare: f64) -> Pages {
        let raw_blocks = raw_blocks(logical_blocks, spare);
        let width = if raw_blocks.saturating_mul(pages_per_block) < (1 << 24) {
            3
        } else {
            4
        };
        Pages {
            pages_per_block,
            raw_blocks,
            width,
            map: NumberMap::default(),
            blocks: Vec::new(),
            free: Vec::new(),
            active: None,
            listed_most: (raw_blocks / LISTED_SHARE)
                .max(LISTED_PAGES_LEAST / pages_per_block)
                .max(1),
            lists: 0,
            unused: Vec::new(),
            scans: 0,
        }
    }

    /// Write logical page `page`: the old copy turns stale, and the page
    /// goes to the active block, after collecting where none is free.
    pub fn write(&mut self, page: u64, policy: WearLeveling) -> Collected {
        // Unmapped, not only stale, so a scan while making room does not
        // list it.
        if let Some(at) = self.unmap(page) {
            self.stale(at);
        }
        let mut done = Collected::default();
        let b = self.room(policy, &mut done);
        self.append(b, page as u32);
        done
    }

    /// Discard logical page `page`: its copy turns stale and it is mapped
    /// nowhere, so collection no longer copies it.
    pub fn trim(&mut self, page: u64) {
        if let Some(at) = self.unmap(page) {
            self.stale(at);
        }
    }

    /// The erase count of every block made so far.
    pub fn erase_counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks.iter().map(|b| b.erases)
    }

    /// Unmap logical `page`: the raw slot it was in.
    fn unmap(&mut self, page: u64) -> Option<u64> {
        let chunk = self.map.get_mut(&(page / CHUNK))?;
        let i = (page % CHUNK) as usize;
        let at = load(chunk, i, self.width).checked_sub(1)?;
        store(chunk, i, self.width, 0);
        Some(u64::from(at))
    }

    /// Map logical `page` to `value` (its slot plus one, or 0).
    fn set(&mut self, page: u64, value: u32) {
        let width = self.width;
        let chunk = self
            .map
            .entry(page / CHUNK)
            .or_insert_with(|| vec![0; CHUNK as usize * width].into_boxed_slice());
        store(chunk, (page % CHUNK) as usize, width, value);
    }

    /// Raw slot `at` no longer holds its page.
    fn stale(&mut self, at: u64) {
        let block = &mut self.blocks[(at / self.pages_per_block) as usize];
        block.valid -= 1;
        if let Some(listed) = &mut block.listed {
            store(listed, (at % self.pages_per_block) as usize, self.width, 0);
        }
    }

    fn append(&mut self, b: u32, page: u32) {
        let block = &mut self.blocks[b as usize];
        let at = u64::from(b) * self.pages_per_block + block.written;
        block.written += 1;
        block.valid += 1;
        if let Some(listed) = &mut block.listed {
            let bytes = (page + 1).to_le_bytes();
            // Each width a fixed-size copy, as in [`store`].
            if self.width == 3 {
                listed.extend_from_slice(&bytes[..3]);
            } else {
                listed.extend_from_slice(&bytes);
            }
        }
        self.set(u64::from(page), at as u32 + 1);
    }

    fn has_room(&self, b: u32) -> bool {
        self.blocks[b as usize].written < self.pages_per_block
    }

    /// Free blocks, counting those not made yet.
    fn available(&self) -> u64 {
        self.free.len() as u64 + (self.raw_blocks - self.blocks.len() as u64)
    }

    /// A free block to write, listed from its first page.
    fn take(&mut self, policy: WearLeveling) -> u32 {
        let listed = Some(self.new_list(0));
        if self.free.is_empty() {
            self.blocks.push(Block {
                written: 0,
                valid: 0,
                erases: 0,
                listed,
            });
            self.lists += 1;
            return (self.blocks.len() - 1) as u32;
        }
        let blocks = &self.blocks;
        let i = pick(policy, &self.free, |b| blocks[b as usize].erases);
        let b = self.free.remove(i) as u32;
        self.blocks[b as usize].listed = listed;
        self.lists += 1;
        b
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
            self.prune();
            if self.available() > 1 {
                self.active = Some(self.take(policy));
                continue;
            }
            let victim = self.victim(policy);
            if self.blocks[victim as usize].listed.is_none() {
                self.scan(victim);
            }
            let into = self.take(policy);
            self.active = Some(into);
            let v = &mut self.blocks[victim as usize];
            let moved = v.listed.take().expect("the block to collect was listed above");
            self.lists -= 1;
            v.written = 0;
            v.valid = 0;
            v.erases += 1;
            for slot in 0..moved.len() / self.width {
                if let Some(page) = load(&moved, slot, self.width).checked_sub(1) {
                    self.append(into, page);
                    done.copies += 1;
                }
            }
            self.unused.push(moved);
            self.free.push(u64::from(victim));
            done.erases += 1;
            done.blocks += 1;
        }
    }

    /// An empty page list, one let go where there is one, holding `len`
    /// zero bytes.
    fn new_list(&mut self, len: usize) -> Vec<u8> {
        let mut list = self
            .unused
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.pages_per_block as usize * self.width));
        list.clear();
        list.resize(len, 0);
        list
    }

    /// Past [`Self::listed_most`] and half as many again page lists, keep
    /// only the lists of the blocks with the fewest valid pages, where
    /// collection looks first. Called when the block being written is
    /// full, so no list still grows.
    fn prune(&mut self) {
        if self.lists <= self.listed_most + self.listed_most / 2 {
            return;
        }
        let mut listed: Vec<u32> = (0..self.blocks.len() as u32)
            .filter(|&b| self.blocks[b as usize].listed.is_some())
            .collect();
        listed.sort_unstable_by_key(|&b| (self.blocks[b as usize].valid, b));
        for &b in &listed[self.listed_most as usize..] {
            self.unlist(b);
        }
    }

    /// Let block `b`'s page list go, if it has one, to be used again.
    fn unlist(&mut self, b: u32) {
        if let Some(dropped) = self.blocks[b as usize].listed.take() {
            self.unused.push(dropped);
            self.lists -= 1;
        }
    }

    /// List `victim`, and with it the full blocks with the fewest valid
    /// pages, which collection takes next; other full blocks drop their
    /// lists, so no more than [`Self::listed_most`] of them keep one. The
    /// newly listed are filled by one pass over the map: the pages of a
    /// block are those mapped into its slots.
    fn scan(&mut self, victim: u32) {
        self.scans += 1;
        let mut full: Vec<u32> = (0..self.blocks.len() as u32).filter(|&b| !self.has_room(b)).collect();
        full.sort_unstable_by_key(|&b| (b != victim, self.blocks[b as usize].valid, b));
        // Which blocks the pass fills, a byte each: it reads this for every
        // page, and the blocks themselves are too wide to stay in cache.
        let mut wanted = vec![false; self.blocks.len()];
        let (first, rest) = full.split_at(full.len().min(self.listed_most as usize));
        // Lists let go before new ones are made, so they are used again.
        for &b in rest {
            self.unlist(b);
        }
        for &b in first {
            let block = &self.blocks[b as usize];
            if block.listed.is_none() {
                let list = self.new_list(block.written as usize * self.width);
                self.blocks[b as usize].listed = Some(list);
                wanted[b as usize] = true;
                self.lists += 1;
            }
        }
        let (ppb, width) = (self.pages_per_block, self.width);
        // A shift where a block's pages are a power of two, as on every
        // built-in card: a division for each of millions of pages is most
        // of the pass.
        let shift = ppb.is_power_of_two().then(|| ppb.trailing_zeros());
        for (&c, chunk) in &self.map {
            for i in 0..CHUNK as usize {
                let Some(at) = load(chunk, i, width).checked_sub(1) else {
                    continue;
                };
                let (b, slot) = match shift {
                    Some(s) => ((at >> s) as usize, (at & (ppb as u32 - 1)) as usize),
                    None => ((u64::from(at) / ppb) as usize, (u64::from(at) % ppb) as usize),
                };
                if wanted[b] {
                    let listed = self.blocks[b].listed.as_mut().expect("wanted blocks are listed");
                    store(listed, slot, width, (c * CHUNK) as u32 + i as u32 + 1);
                }
            }
        }
    }
}

/// Entry `i` of a map chunk of `width`-byte little-endian entries. Each
/// width has its own fixed-size copy: a copy of a run-time length is a
/// call, and the scan makes millions of these.
#[inline]
fn load(chunk: &[u8], i: usize, width: usize) -> u32 {
    if width == 3 {
        let b: [u8; 3] = chunk[i * 3..i * 3 + 3].try_into().expect("3 bytes");
        u32::from_le_bytes([b[0], b[1], b[2], 0])
    } else {
        u32::from_le_bytes(chunk[i * 4..i * 4 + 4].try_into().expect("4 bytes"))
    }
}

/// Set entry `i` of a map chunk; `value` fits in `width` bytes (see
/// [`Pages::width`]).
#[inline]
fn store(chunk: &mut [u8], i: usize, width: usize, value: u32) {
    let bytes = value.to_le_bytes();
    if width == 3 {
        chunk[i * 3..i * 3 + 3].copy_from_slice(&bytes[..3]);
    } else {
        chunk[i * 4..i * 4 + 4].copy_from_slice(&bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Pages {
        /// Where logical `page` is: its raw slot number.
        fn slot_of(&self, page: u64) -> Option<u64> {
            let chunk = self.map.get(&(page / CHUNK))?;
            load(chunk, (page % CHUNK) as usize, self.width)
                .checked_sub(1)
                .map(u64::from)
        }

        /// Every mapped page with its raw slot.
        fn mapping(&self) -> Vec<(u64, u64)> {
            let mut all = Vec::new();
            for (&c, chunk) in &self.map {
                for i in 0..CHUNK as usize {
                    if let Some(at) = load(chunk, i, self.width).checked_sub(1) {
                        all.push((c * CHUNK + i as u64, u64::from(at)));
                    }
                }
            }
            all
        }

        fn mapped(&self) -> usize {
            self.mapping().len()
        }

        /// Every written page is in exactly one programmed slot, the one
        /// the map names; each block's valid count is its mapped slots;
        /// every page list agrees with the map; no block holds more than a
        /// block's pages; the raw blocks are never exceeded.
        fn check(&self) -> Result<(), String> {
            let mut valid = vec![0u64; self.blocks.len()];
            let mut holder = std::collections::HashMap::new();
            for (page, at) in self.mapping() {
                let (b, slot) = ((at / self.pages_per_block) as usize, at % self.pages_per_block);
                let Some(block) = self.blocks.get(b) else {
                    return Err(format!("page {page} mapped to block {b}, never made"));
                };
                if slot >= block.written {
                    return Err(format!("page {page} mapped to unprogrammed slot {slot} of block {b}"));
                }
                if holder.insert(at, page).is_some() {
                    return Err(format!("slot {at} holds two pages"));
                }
                valid[b] += 1;
            }
            for (b, block) in self.blocks.iter().enumerate() {
                if valid[b] != block.valid {
                    return Err(format!(
                        "block {b}: {} mapped slots, valid says {}",
                        valid[b], block.valid
                    ));
                }
                if block.written > self.pages_per_block {
                    return Err(format!("block {b} overfull"));
                }
                let Some(listed) = &block.listed else { continue };
                if listed.len() as u64 != block.written * self.width as u64 {
                    return Err(format!(
                        "block {b}: {} bytes listed of {} written",
                        listed.len(),
                        block.written
                    ));
                }
                for slot in 0..block.written {
                    let at = b as u64 * self.pages_per_block + slot;
                    let page = load(listed, slot as usize, self.width);
                    if holder.get(&at).map_or(0, |&p| p as u32 + 1) != page {
                        return Err(format!(
                            "block {b} slot {slot}: its list says {page}, the map otherwise"
                        ));
                    }
                }
            }
            let lists = self.blocks.iter().filter(|b| b.listed.is_some()).count() as u64;
            if lists != self.lists {
                return Err(format!("{lists} page lists, {} counted", self.lists));
            }
            if self.blocks.len() as u64 > self.raw_blocks {
                return Err("more blocks than the raw flash has".into());
            }
            Ok(())
        }
    }

    #[test]
    fn a_wide_region_keeps_four_bytes_a_page_and_a_narrow_one_three() {
        // 2^24 raw slots do not fit 24 bits with the +1; one block fewer does.
        assert_eq!(Pages::new(4095, 4096, 0.0).width, 3);
        assert_eq!(Pages::new(4096, 4096, 0.0).width, 4);
        let mut p = Pages::new(4096, 4096, 0.0);
        p.set(5, 0xfedc_ba98);
        assert_eq!(p.slot_of(5), Some(0xfedc_ba97));
        let mut p = Pages::new(8, 4, 0.5);
        p.set(7, 0x00ab_cdef);
        assert_eq!((p.slot_of(7), p.slot_of(6)), (Some(0x00ab_cdee), None));
    }

    /// The same writes on a region that lists every block and on one that
    /// lists two and scans the map for the rest: the same copies and
    /// erases at each write, the same wear, and scans did happen.
    #[test]
    fn scanning_for_unlisted_blocks_changes_no_choice() {
        for policy in [WearLeveling::None, WearLeveling::Dynamic, WearLeveling::Static] {
            let (mut all, mut few) = (Pages::new(40, 16, 0.15), Pages::new(40, 16, 0.15));
            all.listed_most = u64::MAX / 4;
            few.listed_most = 2;
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            for i in 0..40_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Half the writes to an eighth of the pages: hot and cold.
                let page = if i % 2 == 0 { x % 80 } else { x % 640 };
                assert_eq!(
                    all.write(page, policy),
                    few.write(page, policy),
                    "write {i}, {policy:?}"
                );
            }
            assert_eq!(few.check(), Ok(()));
            assert_eq!(all.scans, 0);
            assert!(few.scans > 100, "{policy:?}: {} scans", few.scans);
            assert!(all.erase_counts().eq(few.erase_counts()), "{policy:?}");
        }
    }

    proptest::proptest! {
        /// Whatever the order of writes, discards and the policy, and
        /// however few blocks keep their page lists, no page is lost or
        /// doubled, and every copy and erase is counted.
        #[test]
        fn collection_never_loses_or_doubles_a_page(
            writes in proptest::collection::vec((0u64..96, 0u8..8), 1..2000),
            spare in 0.05f64..0.5,
            policy in 0usize..3,
            listed in 1u64..20,
        ) {
            let policy = [WearLeveling::None, WearLeveling::Dynamic, WearLeveling::Static][policy];
            // 12 logical blocks of 8 pages: 96 pages.
            let mut p = Pages::new(12, 8, spare);
            p.listed_most = listed;
            proptest::prop_assume!(p.raw_blocks >= 14);
            let (mut copies, mut erases, mut hosted) = (0, 0, 0);
            let mut live = std::collections::BTreeSet::new();
            for &(w, kind) in &writes {
                // One in eight a discard.
                if kind == 0 {
                    p.trim(w);
                    live.remove(&w);
                } else {
                    let done = p.write(w, policy);
                    copies += done.copies;
                    erases += done.erases;
                    hosted += 1;
                    live.insert(w);
                }
                proptest::prop_assert_eq!(p.check(), Ok(()));
            }
            proptest::prop_assert_eq!(p.mapped(), live.len());
            proptest::prop_assert_eq!(p.erase_counts().sum::<u64>(), erases);
            // Every page programmed is a host write or a copy, and sits in a
            // slot of a block, or was erased with one.
            let programmed: u64 = p.blocks.iter().map(|b| b.written).sum::<u64>() + erases * 8;
            proptest::prop_assert_eq!(programmed, hosted + copies);
        }
    }
}
