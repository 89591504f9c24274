//! The AU-mapped part: a hybrid log-block FTL (Arnd Bergmann, "Optimizing
//! Linux with cheap flash drives", LWN 428584). A few allocation units are
//! "open", each backed by a log block. In-order writes append to an open AU
//! cheaply; an out-of-order write turns it into a random-mode AU (fewer of
//! those exist); touching one AU too many forces the least recently used
//! one closed: copy its still-valid rest and erase, the merge that makes
//! cheap cards collapse. O(open AUs) a write.

use super::wear::Blocks;
use super::{FlashWork, WriteCost};
use crate::sim::params::Params;

#[derive(Debug, Clone, PartialEq, Eq)]
struct OpenAu {
    au: u64,
    /// Where the log's first write began. On a `tail_log_open` card, a log
    /// that began past the AU's first byte and reached its end holds the
    /// tail, not a whole block: it stays open (see [`OpenAu::complete`]),
    /// so a write landing behind it, as flashbench's `--open-au --random`
    /// with two chunks an AU makes, turns it random and merges it.
    start: u64,
    /// Next in-order byte.
    next: u64,
    random: bool,
    /// Pages the host has programmed into the log block since the AU opened,
    /// in order or not: the log holds one AU's worth, so a random-mode AU
    /// whose log is full is merged (a full random pass over an AU ends in
    /// one merge, which is why the `--random` rows of Bradford's
    /// Flashbenching post run at about half the in-order speed even with
    /// few AUs open).
    log_pages: u64,
    last_use: u64,
}

impl OpenAu {
    /// Written in order to the AU's end: closing it copies nothing, so it
    /// is the first to give its slot up.
    fn complete(&self, p: &Params) -> bool {
        !self.random && self.next >= p.au_size
    }
}

/// The open AUs, and where merges put the data.
#[derive(Debug, Clone, Default)]
pub struct Logs {
    open: Vec<OpenAu>,
    tick: u64,
    pub blocks: Blocks,
}

/// One write's place in the log-block FTL: which AU, where, how many pages.
pub(super) struct Placed {
    pub au: u64,
    pub off: u64,
    pub len: u64,
    pub pages: u64,
}

pub(super) fn page_copy_ns(p: &Params) -> u64 {
    if p.copy_page_ns > 0 {
        p.copy_page_ns
    } else {
        p.page_read_ns + p.page_program_ns
    }
}

impl Logs {
    /// Spare blocks of the pool merges take from: a log for each AU that
    /// can be open, and one to merge into.
    pub(super) fn spare_blocks(p: &Params) -> u64 {
        p.open_aus_linear + p.open_aus_random + 1
    }

    /// AU `au`'s data moved to a fresh block and its old block was erased.
    /// Returns the time static wear levelling took after it.
    fn moved(&mut self, p: &Params, au: u64, work: &mut FlashWork) -> u64 {
        work.erases += 1;
        let pages = p.au_size / p.page_size;
        let l = self.blocks.moved(
            au,
            p.capacity / p.au_size,
            Self::spare_blocks(p),
            p.wear_leveling,
            pages,
        );
        work.wear_copies += l.copies;
        work.erases += l.erases;
        l.copies * page_copy_ns(p) + l.erases * p.au_erase_ns
    }

    /// Cost of closing a slot, then erasing the block it replaces. A
    /// random-mode AU is merged whole. An in-order AU keeps the data
    /// block's head (the log started where the data block left off), so
    /// only the tail past the last write is copied in. Counted in `work`.
    ///
    /// Keeping the head is what the seeds measured. Copying it too (the
    /// whole AU per merge, as Bergmann's OLPC post of 2011-03-14 reckons
    /// for small random writes) moved seed 004's random-order rows past the
    /// limit from within 15% to 33-41% slow, and seed 002's iozone random
    /// writes to 29-44% slow; fitting them again needed a page copy at half
    /// a page program (1.45 ms against 3.0 ms on the Kingston), which no
    /// copy-back does. So 4 KiB random writes past the limit amplify about
    /// AU / (2 x write), not AU / write.
    fn close(&mut self, p: &Params, s: &OpenAu, work: &mut FlashWork) -> u64 {
        let pages = p.au_size / p.page_size;
        let copy_pages = if s.random {
            pages
        } else {
            pages - (s.next / p.page_size).min(pages)
        };
        work.merge_copies += copy_pages;
        work.merges += 1;
        let levelled = self.moved(p, s.au, work);
        copy_pages * page_copy_ns(p) + p.au_erase_ns + levelled
    }

    /// Merge slot `i` out, charging `cost`.
    fn merge(&mut self, p: &Params, i: usize, random: bool, work: &mut FlashWork, cost: &mut WriteCost) {
        let old = self.open.remove(i);
        let merged = OpenAu {
            random: old.random || random,
            ..old
        };
        let ns = self.close(p, &merged, work);
        cost.ns += ns;
        cost.merge_ns += ns;
        cost.gc += 1;
    }

    fn lru(&self, random: bool) -> Option<usize> {
        self.open
            .iter()
            .enumerate()
            .filter(|(_, s)| s.random == random)
            .min_by_key(|(_, s)| s.last_use)
            .map(|(k, _)| k)
    }

    /// Write `w` (inside one AU) into the logs, with `cost` holding its
    /// program time.
    pub(super) fn write(&mut self, p: &Params, w: &Placed, work: &mut FlashWork, cost: &mut WriteCost) {
        self.tick += 1;
        let tick = self.tick;
        let (au, off, len, pages) = (w.au, w.off, w.len, w.pages);
        let au_pages = p.au_size / p.page_size;
        if let Some(i) = self.open.iter().position(|s| s.au == au) {
            let in_order = !self.open[i].random && off >= self.open[i].next;
            if in_order {
                let s = &mut self.open[i];
                // A forward gap is filled by copying the skipped pages from the old block.
                let gap = (off - s.next) / p.page_size;
                cost.ns += gap * page_copy_ns(p);
                work.merge_copies += gap;
                s.next = off + len;
                s.log_pages += pages;
                s.last_use = tick;
            } else if self.open[i].random || self.random_count() < p.open_aus_random {
                let s = &mut self.open[i];
                s.random = true;
                s.log_pages += pages;
                s.last_use = tick;
                cost.ns += p.random_write_ns + pages * p.random_page_ns;
            } else if let Some(k) = self.lru(true) {
                // No random-mode AU to spare: merge the least recently used
                // one (copy its whole AU, erase) and take its place.
                self.merge(p, k, false, work, cost);
                let i = self.open.iter().position(|s| s.au == au).expect("still open");
                let s = &mut self.open[i];
                s.random = true;
                s.log_pages += pages;
                s.last_use = tick;
                cost.ns += p.random_write_ns + pages * p.random_page_ns;
            } else {
                // A card with no random-mode AUs merges this one.
                self.merge(p, i, false, work, cost);
                self.open(p, w, tick, work, cost);
            }
            if let Some(i) = self
                .open
                .iter()
                .position(|s| s.au == au && s.random && s.log_pages >= au_pages)
            {
                // Log block full: merge into a fresh block; the AU is closed.
                self.merge(p, i, true, work, cost);
            }
        } else {
            self.open(p, w, tick, work, cost);
        }
        if let Some(i) = self
            .open
            .iter()
            .position(|s| s.au == au && s.complete(p) && (s.start == 0 || !p.tail_log_open))
        {
            // A log written in order to the AU's end simply replaces the
            // data block (a switch merge): the slot is free. On a
            // `tail_log_open` card, only a log that began at the start.
            self.switch(p, i, work, cost);
        }
    }

    /// Close complete slot `i` ([`OpenAu::complete`]) as a switch merge:
    /// erase the old block, copy nothing.
    fn switch(&mut self, p: &Params, i: usize, work: &mut FlashWork, cost: &mut WriteCost) {
        let s = self.open.remove(i);
        cost.ns += p.au_erase_ns;
        work.switch_merges += 1;
        let levelled = self.moved(p, s.au, work);
        cost.ns += levelled;
        cost.merge_ns += levelled;
    }

    fn random_count(&self) -> u64 {
        self.open.iter().filter(|s| s.random).count() as u64
    }

    fn open(&mut self, p: &Params, w: &Placed, tick: u64, work: &mut FlashWork, cost: &mut WriteCost) {
        let linear = self.open.iter().filter(|s| !s.random).count() as u64;
        if linear >= p.open_aus_linear {
            // A complete log gives its slot up first: it costs an erase.
            let complete = (self.open.iter().enumerate())
                .filter(|(_, s)| s.complete(p))
                .min_by_key(|(_, s)| s.last_use)
                .map(|(k, _)| k);
            if let Some(k) = complete {
                self.switch(p, k, work, cost);
            } else if let Some(lru) = self.lru(false) {
                self.merge(p, lru, false, work, cost);
            }
        }
        self.open.push(OpenAu {
            au: w.au,
            start: w.off,
            next: w.off + w.len,
            random: false,
            log_pages: w.pages,
            last_use: tick,
        });
    }

    /// AU `au` was discarded whole: its log, if it has one, goes back to
    /// the pool unmerged (nothing in it or behind it is worth copying).
    pub(super) fn drop_log(&mut self, au: u64) {
        self.open.retain(|s| s.au != au);
    }

    /// AUs currently open (for tests and `sim` diagnostics).
    pub fn open_aus(&self) -> Vec<u64> {
        self.open.iter().map(|s| s.au).collect()
    }

    /// The open AUs by mode: written in order, and taking random writes
    /// (each counted against its own limit, `open_aus_linear` and
    /// `open_aus_random`).
    pub fn open_modes(&self) -> (u64, u64) {
        let random = self.random_count();
        (self.open.len() as u64 - random, random)
    }
}
