//! A hybrid log-block FTL (Arnd Bergmann, "Optimizing Linux with cheap flash
//! drives", LWN 428584): a few allocation units are "open", each backed by a log
//! block. In-order writes append to an open AU cheaply; an out-of-order write turns
//! it into a random-mode AU (fewer of those exist); touching one AU too many forces
//! the least recently used one closed: copy its still-valid rest and erase, the
//! garbage collection that makes cheap cards collapse. Everything here is O(1) in
//! the size of a write (O(open AUs) to find the slot).

use super::params::Params;

#[derive(Debug, Clone, PartialEq, Eq)]
struct OpenAu {
    au: u64,
    /// Next in-order byte.
    next: u64,
    random: bool,
    /// Pages the host has programmed into the log block since the AU opened,
    /// in order or not: the log holds one AU's worth, so a random-mode AU
    /// whose log is full is merged (a full random pass over an AU ends in
    /// one merge, which is why the `--random` rows of Bradford's Flashbenching post run at about half
    /// the in-order speed even with few AUs open).
    log_pages: u64,
    last_use: u64,
}

/// The flash work the FTL did since the card was made: what wears it out.
/// A trace replayed on the model (`life`) reads this; write amplification
/// is `(pages_programmed + pages_copied) x page size / bytes the host
/// wrote`, and wear is `erases` spread over the card's blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct FlashWork {
    /// Pages the host's writes programmed, each partly covered edge page
    /// counted once (it is read, merged and programmed whole).
    pub pages_programmed: u64,
    /// Pages copied by the FTL: the valid rest of an AU it merged, and the
    /// pages an in-order log skipped over.
    pub pages_copied: u64,
    /// Blocks erased: one per merge and one per switch merge.
    pub erases: u64,
    /// Merges: an AU closed by copying its valid pages to a fresh block
    /// (the "garbage collection" that makes cheap cards collapse).
    pub merges: u64,
    /// Switch merges: a log written in order to its AU's end replaced the
    /// data block whole, so only the old block's erase was paid.
    pub switch_merges: u64,
}

/// Open-AU bookkeeping plus the flash work done.
#[derive(Debug, Clone, Default)]
pub struct Ftl {
    open: Vec<OpenAu>,
    tick: u64,
    /// (AU, byte) right after the last write, to tell sequential from random.
    last_end: Option<(u64, u64)>,
    pub work: FlashWork,
}

/// Flash-array time for one write, and whether it ran GC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteCost {
    pub ns: u64,
    pub gc: u64,
    /// The part of `ns` that merged AUs (copies and erases of closed ones).
    pub merge_ns: u64,
}

impl Ftl {
    fn page_copy_ns(p: &Params) -> u64 {
        if p.copy_page_ns > 0 {
            p.copy_page_ns
        } else {
            p.page_read_ns + p.page_program_ns
        }
    }

    /// Cost of closing a slot, then erasing the block it replaces. A random-mode
    /// AU is merged whole. An in-order AU keeps the data block's head (the log
    /// started where the data block left off), so only the tail past the last
    /// write is copied in. Counted in `work`.
    fn close(&mut self, p: &Params, s: &OpenAu) -> u64 {
        let pages = p.au_size / p.page_size;
        let copy_pages = if s.random {
            pages
        } else {
            pages - (s.next / p.page_size).min(pages)
        };
        self.work.pages_copied += copy_pages;
        self.work.erases += 1;
        self.work.merges += 1;
        copy_pages * Self::page_copy_ns(p) + p.au_erase_ns
    }

    /// Program cost of `len` bytes at `off` inside an AU: whole pages, plus for
    /// each partially covered edge page a read-modify-write (page read and the
    /// card's partial-page merge cost).
    fn program(p: &Params, off: u64, len: u64) -> (u64, u64) {
        let first = off / p.page_size;
        let last = (off + len - 1) / p.page_size;
        let pages = last - first + 1;
        let mut partial = 0;
        if !off.is_multiple_of(p.page_size) {
            partial += 1;
        }
        if !(off + len).is_multiple_of(p.page_size) && (first != last || partial == 0) {
            partial += 1;
        }
        (
            pages * p.page_program_ns + partial * (p.page_read_ns + p.partial_page_write_ns),
            pages,
        )
    }

    /// Write `len` bytes at byte `off` of AU `au` (the caller splits at AU bounds).
    pub fn write(&mut self, p: &Params, au: u64, off: u64, len: u64) -> WriteCost {
        self.tick += 1;
        let (program_ns, pages) = Self::program(p, off, len);
        self.work.pages_programmed += pages;
        let sequential = self.last_end == Some((au, off));
        self.last_end = Some((au, off + len));
        if p.page_mapped {
            // Page-mapped FTL: any order, no merge; a jump costs a map update.
            let extra = if sequential { 0 } else { p.random_write_ns };
            return WriteCost {
                ns: program_ns + extra,
                gc: 0,
                merge_ns: 0,
            };
        }
        if au < p.fat_area_aus {
            // FAT area: page-mapped, small random writes cost only their pages.
            return WriteCost {
                ns: program_ns,
                gc: 0,
                merge_ns: 0,
            };
        }
        let mut cost = WriteCost {
            ns: program_ns,
            gc: 0,
            merge_ns: 0,
        };
        let au_pages = p.au_size / p.page_size;
        let tick = self.tick;
        if let Some(i) = self.open.iter().position(|s| s.au == au) {
            let in_order = !self.open[i].random && off >= self.open[i].next;
            if in_order {
                let s = &mut self.open[i];
                // A forward gap is filled by copying the skipped pages from the old block.
                let gap = (off - s.next) / p.page_size;
                cost.ns += gap * Self::page_copy_ns(p);
                self.work.pages_copied += gap;
                s.next = off + len;
                s.log_pages += pages;
                s.last_use = tick;
            } else if self.open[i].random || self.random_count() < p.open_aus_random {
                let s = &mut self.open[i];
                s.random = true;
                s.log_pages += pages;
                s.last_use = tick;
                cost.ns += p.random_write_ns + pages * p.random_page_ns;
            } else {
                // No random-mode AU to spare: merge the least recently used
                // one (copy its whole AU, erase) and take its place.
                let lru = self
                    .open
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.random)
                    .min_by_key(|(_, s)| s.last_use)
                    .map(|(k, _)| k);
                match lru {
                    Some(k) => {
                        let old = self.open.remove(k);
                        let merge = self.close(p, &old);
                        cost.ns += merge;
                        cost.merge_ns += merge;
                        cost.gc += 1;
                        let i = self.open.iter().position(|s| s.au == au).expect("still open");
                        let s = &mut self.open[i];
                        s.random = true;
                        s.log_pages += pages;
                        s.last_use = tick;
                        cost.ns += p.random_write_ns + pages * p.random_page_ns;
                    }
                    None => {
                        // A card with no random-mode AUs merges this one.
                        let old = self.open.remove(i);
                        let merge = self.close(p, &old);
                        cost.ns += merge;
                        cost.merge_ns += merge;
                        cost.gc += 1;
                        self.open(p, au, off, len, pages, tick, &mut cost);
                    }
                }
            }
            if let Some(i) = self
                .open
                .iter()
                .position(|s| s.au == au && s.random && s.log_pages >= au_pages)
            {
                // Log block full: merge into a fresh block; the AU is closed.
                let merged = OpenAu {
                    random: true,
                    ..self.open.remove(i)
                };
                let merge = self.close(p, &merged);
                cost.ns += merge;
                cost.merge_ns += merge;
                cost.gc += 1;
            }
        } else {
            self.open(p, au, off, len, pages, tick, &mut cost);
        }
        if let Some(i) = self
            .open
            .iter()
            .position(|s| s.au == au && !s.random && s.next >= p.au_size)
        {
            // A log written in order to the end simply replaces the data block
            // (a switch merge): erase the old block, no copy, the slot is free.
            self.open.remove(i);
            cost.ns += p.au_erase_ns;
            self.work.erases += 1;
            self.work.switch_merges += 1;
        }
        cost
    }

    fn random_count(&self) -> u64 {
        self.open.iter().filter(|s| s.random).count() as u64
    }

    #[allow(clippy::too_many_arguments)]
    fn open(&mut self, p: &Params, au: u64, off: u64, len: u64, pages: u64, tick: u64, cost: &mut WriteCost) {
        let linear = self.open.iter().filter(|s| !s.random).count() as u64;
        if linear >= p.open_aus_linear
            && let Some(lru) = self
                .open
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.random)
                .min_by_key(|(_, s)| s.last_use)
                .map(|(i, _)| i)
        {
            let old = self.open.remove(lru);
            let merge = self.close(p, &old);
            cost.ns += merge;
            cost.merge_ns += merge;
            cost.gc += 1;
        }
        self.open.push(OpenAu {
            au,
            next: off + len,
            random: false,
            log_pages: pages,
            last_use: tick,
        });
    }

    /// AUs currently open (for tests and `sim` diagnostics).
    pub fn open_aus(&self) -> Vec<u64> {
        self.open.iter().map(|s| s.au).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(open: u64, random: u64) -> Params {
        let mut p = Params::default();
        p.set("open_aus_linear", &open.to_string()).unwrap();
        p.set("open_aus_random", &random.to_string()).unwrap();
        p
    }

    /// flashbench --open-au's linear pattern: N AUs, each written in order in
    /// `chunk` pieces, interleaved. Returns GC events.
    fn interleaved(p: &Params, n: u64, chunk: u64) -> u64 {
        let mut f = Ftl::default();
        for c in 0..p.au_size / chunk {
            for a in 0..n {
                f.write(p, 10 + a * 2, c * chunk, chunk);
            }
        }
        f.work.merges
    }

    #[test]
    fn gc_only_past_the_open_au_limit() {
        let p = card(3, 3);
        assert_eq!(interleaved(&p, 1, 64 << 10), 0);
        assert_eq!(interleaved(&p, 3, 64 << 10), 0);
        let chunks = p.au_size / (64 << 10);
        assert!(
            interleaved(&p, 4, 64 << 10) >= (chunks - 1) * 4 - 3,
            "every write evicts once over the limit (until AUs complete): {}",
            interleaved(&p, 4, 64 << 10)
        );
    }

    #[test]
    fn random_order_needs_random_slots() {
        let p = card(4, 1);
        let mut f = Ftl::default();
        // Backwards writes into one AU: allowed in random mode, no GC.
        for c in (0..8).rev() {
            f.write(&p, 5, c * 65536, 65536);
        }
        assert_eq!(f.work.merges, 0);
        // A second AU written out of order with no random slot left merges.
        f.write(&p, 6, 65536, 65536);
        f.write(&p, 6, 0, 65536);
        assert_eq!(f.work.merges, 1);
    }

    #[test]
    fn a_random_pass_ends_in_one_merge_and_leaves_the_au_closed() {
        let p = card(4, 2);
        let pages = p.au_size / p.page_size;
        // Every page once, in an order that turns random after two writes.
        let order: Vec<u64> = (0..pages).map(|k| (k * 37 + 5) % pages).collect();
        let mut f = Ftl::default();
        for (i, &k) in order.iter().enumerate() {
            f.write(&p, 7, k * p.page_size, p.page_size);
            let open = f.open_aus().contains(&7);
            assert_eq!(open, i + 1 < order.len(), "write {i}");
        }
        assert_eq!(f.work.merges, 1, "the full log merges once, at the last page");
        // So a second pass starts from the same state as the first.
        for &k in &order {
            f.write(&p, 7, k * p.page_size, p.page_size);
        }
        assert_eq!(f.work.merges, 2);
        assert!(f.open_aus().is_empty());
    }

    #[test]
    fn fat_area_never_collects() {
        let mut p = card(1, 0);
        p.set("fat_area_aus", "2").unwrap();
        let mut f = Ftl::default();
        for i in 0..1000u64 {
            f.write(&p, i % 2, (i * 7919 % 256) * 16384, 4096);
        }
        assert_eq!(f.work.merges, 0);
    }

    #[test]
    fn partial_pages_cost_a_read_modify_write() {
        let p = Params::default();
        let (full, _) = Ftl::program(&p, 0, p.page_size);
        let (part, _) = Ftl::program(&p, 512, 512);
        assert_eq!(full, p.page_program_ns);
        assert_eq!(part, p.page_program_ns + p.page_read_ns + p.partial_page_write_ns);
    }

    /// The work in closed form: an AU written in order to its end costs
    /// its pages and one erase (a switch merge); one left half written and
    /// closed by the next AU copies its other half; a random pass over an
    /// AU programs each page once and merges the AU whole when its log fills.
    #[test]
    fn flash_work_counts_pages_copies_and_erases_in_closed_form() {
        let p = card(1, 1);
        let pages = p.au_size / p.page_size;
        let mut f = Ftl::default();
        for c in 0..pages {
            f.write(&p, 10, c * p.page_size, p.page_size);
        }
        let whole = FlashWork {
            pages_programmed: pages,
            erases: 1,
            switch_merges: 1,
            ..FlashWork::default()
        };
        assert_eq!(f.work, whole);

        let mut f = Ftl::default();
        f.write(&p, 10, 0, p.au_size / 2);
        f.write(&p, 12, 0, p.page_size);
        let half = FlashWork {
            pages_programmed: pages / 2 + 1,
            pages_copied: pages / 2,
            erases: 1,
            merges: 1,
            ..FlashWork::default()
        };
        assert_eq!(f.work, half);
        // Write amplification: flash pages over host pages.
        let waf = (f.work.pages_programmed + f.work.pages_copied) as f64 / (pages / 2 + 1) as f64;
        assert!((waf - (pages + 1) as f64 / (pages / 2 + 1) as f64).abs() < 1e-12);

        // Page 1, then page 0 (behind it: the AU turns random), then the
        // rest: the log fills at the last page and the AU merges whole.
        let mut f = Ftl::default();
        for c in [1].into_iter().chain(0..1).chain(2..pages) {
            f.write(&p, 10, c * p.page_size, p.page_size);
        }
        let random = FlashWork {
            pages_programmed: pages,
            pages_copied: pages,
            erases: 1,
            merges: 1,
            ..FlashWork::default()
        };
        assert_eq!(f.work, random);
    }
}
