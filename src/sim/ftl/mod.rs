//! The card's flash translation: which flash work each write costs, and its
//! time. Two kinds of mapping sit side by side:
//! - AU-mapped ([`log`]): a hybrid log-block FTL with a few open AUs, where
//!   touching one AU too many merges one;
//! - page-mapped ([`pages`]): a `page_mapped` card, or the FAT area of an
//!   AU-mapped one, where any page goes anywhere and, once the spare blocks
//!   run out, garbage collection copies pages.
//!
//! Every page programmed, copied and erased is counted by cause in
//! [`FlashWork`], and every erase lands on a block ([`wear`]), beside the
//! time it costs, so the counts and the timing cannot disagree.

mod log;
mod pages;
pub mod wear;
mod work;

pub use work::{FlashReport, FlashWork};

use super::params::Params;
use log::{Logs, Placed, page_copy_ns};
use pages::Pages;

/// Where [`Ftl::erases_by_block`] numbers the page-mapped region's
/// blocks: past any AU-mapped block of a card of up to 2^48 AUs.
pub const PAGE_MAPPED_BLOCKS: u64 = 1 << 48;

/// The FTL's state: open AUs, the page-mapped region, the work done.
#[derive(Debug, Clone, Default)]
pub struct Ftl {
    logs: Logs,
    /// The page-mapped region's pages, made on its first write when the
    /// card has `spare` (without it, free blocks never run out and nothing
    /// needs tracking).
    pages: Option<Pages>,
    /// (AU, byte) right after the last write, to tell sequential from random.
    last_end: Option<(u64, u64)>,
    /// The AU being written in one unbroken in-order run from its first
    /// page (`start_program_ns`).
    opening: Option<u64>,
    pub work: FlashWork,
}

/// Flash-array time for one write, and whether it ran GC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteCost {
    pub ns: u64,
    pub gc: u64,
    /// The part of `ns` that merged AUs or collected blocks (copies and
    /// erases).
    pub merge_ns: u64,
}

impl Ftl {
    /// Program cost of `len` bytes at `off` inside an AU whose pages program
    /// in `page_ns`: whole pages, plus for each partially covered edge page a
    /// read-modify-write (page read and the card's partial-page merge cost).
    /// Returns the time, the pages and the partial ones among them.
    fn program(p: &Params, page_ns: u64, off: u64, len: u64) -> (u64, u64, u64) {
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
            pages * page_ns + partial * (p.page_read_ns + p.partial_page_write_ns),
            pages,
            partial,
        )
    }

    /// Write `len` bytes at byte `off` of AU `au` (the caller splits at AU bounds).
    pub fn write(&mut self, p: &Params, au: u64, off: u64, len: u64) -> WriteCost {
        let sequential = self.last_end == Some((au, off));
        self.last_end = Some((au, off + len));
        let opening = off == 0 || (sequential && self.opening == Some(au));
        self.opening = opening.then_some(au);
        let page_ns = if opening && p.start_program_ns > 0 {
            p.start_program_ns
        } else {
            p.program_ns(au)
        };
        let (program_ns, pages, partial) = Self::program(p, page_ns, off, len);
        self.work.host_pages += pages;
        self.work.rmw_pages += partial;
        let mut cost = WriteCost {
            ns: program_ns,
            gc: 0,
            merge_ns: 0,
        };
        if p.page_mapped || au < p.fat_area_aus {
            // Page-mapped: any order, no merge. A jump on a page-mapped card
            // costs a map update; the FAT area's small random writes cost
            // only their pages.
            if p.page_mapped && !sequential {
                cost.ns += p.random_write_ns;
            }
            self.collect(p, au, off, len, &mut cost);
            return cost;
        }
        let placed = Placed { au, off, len, pages };
        self.logs.write(p, &placed, &mut self.work, &mut cost);
        cost
    }

    /// Place the written pages in the page-mapped region, collecting where
    /// its spare runs out.
    fn collect(&mut self, p: &Params, au: u64, off: u64, len: u64, cost: &mut WriteCost) {
        let Some(spare) = p.spare else { return };
        let pages_per_block = p.au_size / p.page_size;
        let region = p.page_mapped_blocks();
        let pages = self
            .pages
            .get_or_insert_with(|| Pages::new(region, pages_per_block, spare));
        let first = (au * p.au_size + off) / p.page_size;
        let last = (au * p.au_size + off + len - 1) / p.page_size;
        for page in first..=last {
            let done = pages.write(page, p.wear_leveling);
            if done.blocks > 0 {
                let ns = done.copies * page_copy_ns(p) + done.erases * p.au_erase_ns;
                cost.ns += ns;
                cost.merge_ns += ns;
                cost.gc += done.blocks;
                self.work.gc_copies += done.copies;
                self.work.erases += done.erases;
                self.work.collections += done.blocks;
            }
        }
    }

    /// Discard `len` bytes at card byte `off` (TRIM, or SD's erase): the
    /// whole pages it covers in the page-mapped part turn stale, so
    /// collection no longer copies them, and an open AU it covers whole
    /// drops its log unmerged, so closing it later copies nothing. An
    /// AU-mapped AU that is not open keeps its block: the model does not
    /// track which of its pages hold data, so a later merge of it still
    /// copies its rest (what a card that ignores the discard does).
    pub fn discard(&mut self, p: &Params, off: u64, len: u64) {
        let end = off.saturating_add(len).min(p.capacity);
        let region_end = p.page_mapped_blocks() * p.au_size;
        if let Some(pages) = &mut self.pages {
            let first = off.div_ceil(p.page_size);
            let last = end.min(region_end) / p.page_size;
            for page in first..last {
                pages.trim(page);
            }
        }
        if !p.page_mapped {
            let first = off.div_ceil(p.au_size).max(p.fat_area_aus);
            for au in first..end / p.au_size {
                self.logs.drop_log(au);
            }
        }
        if self
            .last_end
            .is_some_and(|(au, at)| au * p.au_size + at > off && au * p.au_size < end)
        {
            self.last_end = None;
        }
    }

    /// AUs currently open (for tests and `sim` diagnostics).
    pub fn open_aus(&self) -> Vec<u64> {
        self.logs.open_aus()
    }

    /// The open AUs in order and in random mode ([`log::Logs::open_modes`]).
    pub fn open_modes(&self) -> (u64, u64) {
        self.logs.open_modes()
    }

    /// The work so far, for a document: `host_bytes` is what the host wrote.
    pub fn report(&self, p: &Params, host_bytes: u64) -> FlashReport {
        let counts = self.erase_counts();
        let blocks = Self::blocks(p);
        FlashReport {
            work: self.work,
            page_size_bytes: p.page_size,
            host_bytes_written: host_bytes,
            flash_bytes_written: self.work.flash_pages() * p.page_size,
            amplification: self.work.amplification(p.page_size, host_bytes),
            blocks,
            blocks_erased: counts.len() as u64,
            most_erases: counts.iter().copied().max().unwrap_or(0),
            mean_erases: self.work.erases as f64 / blocks as f64,
            rated_pe_cycles: p.rated_pe_cycles(),
        }
    }

    /// The card's physical erase blocks: the AU-mapped ones with their pool
    /// of spare blocks ([`log::Logs`]), and the page-mapped region's raw
    /// blocks (as many as it has logical ones where it has no `spare`).
    fn blocks(p: &Params) -> u64 {
        let aus = p.capacity.div_ceil(p.au_size);
        let region = p.page_mapped_blocks();
        let raw = p.spare.map_or(region, |s| crate::sim::params::raw_blocks(region, s));
        let mapped = aus - region;
        let pool = if mapped > 0 { Logs::spare_blocks(p) } else { 0 };
        mapped + pool + raw
    }

    /// Every erase block erased at least once, by a number of its own (the
    /// page-mapped region's from [`PAGE_MAPPED_BLOCKS`] up), with its
    /// count: what a replay compares before and after to see where one
    /// stretch of a workload wore the card.
    pub fn erases_by_block(&self) -> Vec<(u64, u64)> {
        let mut counts: Vec<(u64, u64)> = self.logs.blocks.erases_by_block().collect();
        if let Some(pages) = &self.pages {
            let erased = pages.erase_counts().enumerate().filter(|&(_, n)| n > 0);
            counts.extend(erased.map(|(b, n)| (PAGE_MAPPED_BLOCKS + b as u64, n)));
        }
        counts
    }

    /// The erase count of every erase block erased at least once, AU-mapped
    /// and page-mapped.
    pub fn erase_counts(&self) -> Vec<u64> {
        let mut counts: Vec<u64> = self.logs.blocks.erase_counts().collect();
        if let Some(pages) = &self.pages {
            counts.extend(pages.erase_counts().filter(|&n| n > 0));
        }
        counts
    }
}

/// Desnoyers' closed form for page-mapped flash under uniform random
/// page writes, cleaning in order of age (SYSTOR 2012): A = a / (a +
/// W(-a e^-a)) with a = 1 / (1 - spare), W the principal branch of
/// Lambert's W on (-1/e, 0), found by Newton's method. What the
/// collector's tests, and life's, are held to.
#[cfg(test)]
pub fn desnoyers(spare: f64) -> f64 {
    let a = 1.0 / (1.0 - spare);
    let z = -a * (-a).exp();
    let mut w: f64 = -0.5;
    for _ in 0..100 {
        let e = w.exp();
        w -= (w * e - z) / (e * (w + 1.0));
    }
    a / (a + w)
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

    /// flashbench's `--open-au --random` at half an AU a chunk: the second
    /// half first, then the first. A card that keeps a log begun mid-AU
    /// open merges the AU whole when the write comes back to its start; one
    /// that does not switches the tail log in and opens a fresh one.
    #[test]
    fn a_tail_log_kept_open_merges_when_the_head_comes_back() {
        let half = Params::default().au_size / 2;
        let pages = Params::default().au_size / Params::default().page_size;
        for (keep, merges, switches, copies) in [(true, 1, 0, pages), (false, 0, 1, 0)] {
            let mut p = card(4, 2);
            p.set("tail_log_open", &keep.to_string()).unwrap();
            let mut f = Ftl::default();
            f.write(&p, 9, half, half);
            assert_eq!(f.open_aus(), if keep { vec![9] } else { vec![] }, "keep {keep}");
            f.write(&p, 9, 0, half);
            let w = f.work;
            assert_eq!(
                (w.merges, w.switch_merges, w.merge_copies),
                (merges, switches, copies),
                "keep {keep}"
            );
        }
    }

    /// A kept tail log is complete: when a slot is wanted it goes first,
    /// for an erase, before an AU still being written in order is merged.
    #[test]
    fn a_kept_tail_log_gives_its_slot_up_first() {
        let mut p = card(2, 0);
        p.set("tail_log_open", "true").unwrap();
        let half = p.au_size / 2;
        let mut f = Ftl::default();
        f.write(&p, 3, half, half);
        f.write(&p, 4, 0, p.page_size);
        f.write(&p, 5, 0, p.page_size);
        assert_eq!((f.work.merges, f.work.switch_merges), (0, 1));
        assert_eq!(f.open_aus(), vec![4, 5]);
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
        let (full, _, none) = Ftl::program(&p, p.page_program_ns, 0, p.page_size);
        let (part, _, one) = Ftl::program(&p, p.page_program_ns, 512, 512);
        assert_eq!((none, one), (0, 1));
        assert_eq!(full, p.page_program_ns);
        assert_eq!(part, p.page_program_ns + p.page_read_ns + p.partial_page_write_ns);
    }

    #[test]
    fn leading_aus_program_at_their_own_time() {
        let mut p = Params::default();
        p.set("lead_program_ns", "3000000; 2000000").unwrap();
        let whole = |p: &Params, au| Ftl::default().write(p, au, 0, 2 * p.page_size).ns;
        assert_eq!(whole(&p, 0), 6_000_000);
        assert_eq!(whole(&p, 1), 4_000_000);
        assert_eq!(whole(&p, 2), 2 * p.page_program_ns);
        assert_eq!(p.get("lead_program_ns"), "\"3000000;2000000\"");
        p.set("lead_program_ns", "none").unwrap();
        assert_eq!(whole(&p, 0), 2 * p.page_program_ns);
        // A TOML array, as a `sim:FILE.toml` may give it.
        p.set("lead_program_ns", "[3000000, 2000000]").unwrap();
        assert_eq!((whole(&p, 0), whole(&p, 1)), (6_000_000, 4_000_000));
        p.set("lead_program_ns", "[]").unwrap();
        assert!(p.lead_program_ns.is_empty());
        for bad in ["1,2", "-5", "1;;2", "x", "[1;2]", "[1,,2]"] {
            assert!(p.clone().set("lead_program_ns", bad).is_err(), "{bad}");
        }
    }

    /// An AU's opening run (in order from its first page, nothing else
    /// between) programs at `start_program_ns`; once another AU's write
    /// comes between, the same AU's next in-order pages cost the page's.
    #[test]
    fn an_opening_run_programs_at_its_own_time() {
        let mut p = card(4, 0);
        p.set("start_program_ns", "5000000").unwrap();
        let pg = p.page_size;
        let mut f = Ftl::default();
        let ns = |f: &mut Ftl, au, off| f.write(&p, au, off, pg).ns;
        assert_eq!(ns(&mut f, 0, 0), 5_000_000);
        assert_eq!(ns(&mut f, 0, pg), 5_000_000);
        assert_eq!(ns(&mut f, 1, 0), 5_000_000);
        assert_eq!(ns(&mut f, 0, 2 * pg), p.page_program_ns);
        assert_eq!(ns(&mut f, 1, pg), p.page_program_ns);
        p.set("start_program_ns", "0").unwrap();
        assert_eq!(Ftl::default().write(&p, 2, 0, pg).ns, p.page_program_ns);
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
            host_pages: pages,
            erases: 1,
            switch_merges: 1,
            ..FlashWork::default()
        };
        assert_eq!(f.work, whole);

        let mut f = Ftl::default();
        f.write(&p, 10, 0, p.au_size / 2);
        f.write(&p, 12, 0, p.page_size);
        let half = FlashWork {
            host_pages: pages / 2 + 1,
            merge_copies: pages / 2,
            erases: 1,
            merges: 1,
            ..FlashWork::default()
        };
        assert_eq!(f.work, half);
        // Write amplification: flash pages over host pages.
        let waf = (f.work.host_pages + f.work.merge_copies) as f64 / (pages / 2 + 1) as f64;
        assert!((waf - (pages + 1) as f64 / (pages / 2 + 1) as f64).abs() < 1e-12);

        // Page 1, then page 0 (behind it: the AU turns random), then the
        // rest: the log fills at the last page and the AU merges whole.
        let mut f = Ftl::default();
        for c in [1].into_iter().chain(0..1).chain(2..pages) {
            f.write(&p, 10, c * p.page_size, p.page_size);
        }
        let random = FlashWork {
            host_pages: pages,
            merge_copies: pages,
            erases: 1,
            merges: 1,
            ..FlashWork::default()
        };
        assert_eq!(f.work, random);
    }

    /// A card set up for the closed forms: `open` AUs in order, 1 random.
    fn small(capacity: &str, au: &str, page: &str) -> Params {
        let mut p = card(4, 2);
        for (k, v) in [("capacity", capacity), ("au_size", au), ("page_size", page)] {
            p.set(k, v).unwrap();
        }
        p.validate().unwrap();
        p
    }

    /// A sequential write of the whole card programs each page once and
    /// copies nothing: amplification 1, and one erase per AU.
    #[test]
    fn a_sequential_pass_over_the_card_amplifies_by_exactly_one() {
        let p = small("64M", "4M", "16K");
        let mut f = Ftl::default();
        let chunk = 1 << 20;
        for off in (0..p.capacity).step_by(chunk as usize) {
            let au = off / p.au_size;
            f.write(&p, au, off % p.au_size, chunk);
        }
        assert_eq!(f.work.host_pages, p.capacity / p.page_size);
        assert_eq!(f.work.flash_pages(), f.work.host_pages);
        assert_eq!(f.work.amplification(p.page_size, p.capacity), Some(1.0));
        assert_eq!(f.work.erases, p.capacity / p.au_size);
        assert_eq!(f.work.switch_merges, p.capacity / p.au_size);
        assert_eq!(f.erase_counts().iter().sum::<u64>(), f.work.erases);
        // 16 AUs and a pool of 4 + 2 logs and one to merge into.
        let r = f.report(&p, p.capacity);
        assert_eq!((r.blocks, r.blocks_erased, r.most_erases), (23, 16, 1));
        assert_eq!(r.mean_erases, 16.0 / 23.0);
        assert_eq!(r.flash_bytes_written, p.capacity);
    }

    /// 4 KiB writes uniform at random over far more AUs than are open: each
    /// opens an AU and closes another, which copies what follows its write.
    /// A write at 4 KiB slot j of its 16 KiB page k of the AU's P pages
    /// leaves P - k - [j = 3] pages to copy, so a write costs on average
    /// 1 + (P + 1) / 2 - 1/4 flash pages of 16 KiB: amplification
    /// 2 (P + 1) + 3 in bytes, 517 for 4 MiB AUs (about AU / (2 x write):
    /// the head stays, see `log::Logs::close`). Within 2%: writes that land
    /// in an AU still open take the rest.
    #[test]
    fn small_random_writes_past_the_limit_copy_what_follows_them() {
        let p = small("8G", "4M", "16K");
        let pages = p.au_size / p.page_size;
        let mut f = Ftl::default();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let writes = 20_000u64;
        for _ in 0..writes {
            // xorshift64: a fixed stream, uniform enough over 2^21 slots.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let slot = x % (p.capacity / 4096);
            f.write(&p, slot * 4096 / p.au_size, slot * 4096 % p.au_size, 4096);
        }
        let want = 2.0 * (pages + 1) as f64 + 3.0;
        let got = f.work.amplification(p.page_size, writes * 4096).unwrap();
        assert!(
            (got / want - 1.0).abs() < 0.02,
            "amplification {got:.1}, closed form {want}"
        );
        assert_eq!(f.work.rmw_pages, writes, "every 4 KiB write is a partial 16 KiB page");
        assert_eq!(f.work.gc_copies, 0);
    }

    /// Page-mapped flash under uniform random page writes, at steady state:
    /// Desnoyers' closed form for cleaning in order of age (SYSTOR 2012),
    /// A = a / (a + W(-a e^-a)) with a = 1 / (1 - spare): 5.18 at spare 0.1,
    /// 2.69 at 0.2, 1.88 at 0.3. Greedy cleaning picks the emptiest block,
    /// never a fuller one than age order would: at or a few percent below.
    #[test]
    fn greedy_collection_meets_desnoyers_closed_form() {
        for (spare, published) in [(0.1, 5.18), (0.2, 2.69), (0.3, 1.88)] {
            let mut p = small("64M", "256K", "4K");
            p.set("page_mapped", "true").unwrap();
            p.set("spare", &spare.to_string()).unwrap();
            p.validate().unwrap();
            let closed = desnoyers(spare);
            assert!(
                (closed - published).abs() < 0.01,
                "{closed} against the published {published}"
            );
            let pages = p.capacity / p.page_size;
            let mut f = Ftl::default();
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            let mut page = |f: &mut Ftl, n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let pg = if n < pages { n } else { x % pages };
                f.write(
                    &p,
                    pg * p.page_size / p.au_size,
                    pg * p.page_size % p.au_size,
                    p.page_size,
                );
            };
            // Fill, then reach steady state, then measure.
            for n in 0..9 * pages {
                page(&mut f, n);
            }
            let before = f.work;
            for n in 0..8 * pages {
                page(&mut f, pages + n);
            }
            let host = f.work.host_pages - before.host_pages;
            let flash = f.work.flash_pages() - before.flash_pages();
            let got = flash as f64 / host as f64;
            assert!(
                got <= closed * 1.01 && got >= closed * 0.94,
                "spare {spare}: greedy {got:.3}, closed form {closed:.3}"
            );
            assert_eq!(f.work.merges, 0, "a page-mapped card never merges AUs");
            assert_eq!(f.work.erases, f.work.collections);
        }
    }

    /// One AU merged again and again. Without wear levelling the free
    /// stack hands back the block just freed, so two blocks take every
    /// erase; with dynamic wear levelling the spare pool shares them.
    #[test]
    fn dynamic_wear_levelling_spreads_the_erases_of_a_hot_au() {
        let spread = |policy: &str| {
            let mut p = small("64M", "4M", "16K");
            p.set("wear_leveling", policy).unwrap();
            let mut f = Ftl::default();
            for _ in 0..600 {
                f.write(&p, 3, 0, p.au_size);
            }
            assert_eq!(f.work.erases, 600);
            let counts = f.erase_counts();
            assert_eq!(counts.iter().sum::<u64>(), 600);
            (counts.len(), counts.into_iter().max().unwrap())
        };
        assert_eq!(spread("none"), (2, 300));
        // A log for each of 4 + 2 open AUs and one to merge into, and the
        // AU's own block: 8 blocks, 75 erases each.
        assert_eq!(spread("dynamic"), (8, 75));
    }

    /// The same hot AU under static wear levelling: cold AUs' data moves
    /// to worn blocks, so all 16 AUs' blocks and the 7 spare ones share
    /// the erases, none more than the threshold above another.
    #[test]
    fn static_wear_levelling_brings_every_block_into_the_rotation() {
        let mut p = small("64M", "4M", "16K");
        p.set("wear_leveling", "static").unwrap();
        let mut f = Ftl::default();
        for _ in 0..2000 {
            f.write(&p, 3, 0, p.au_size);
        }
        let counts = f.erase_counts();
        assert_eq!(counts.len(), 16 + 7, "{counts:?}");
        let (least, most) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
        assert!(most - least <= wear::STATIC_SPREAD + 1, "{least}..{most}");
        assert!(f.work.wear_copies > 0 && f.work.wear_copies.is_multiple_of(p.au_size / p.page_size));
        assert_eq!(f.work.erases, 2000 + f.work.wear_copies / (p.au_size / p.page_size));
        assert_eq!(counts.iter().sum::<u64>(), f.work.erases);
    }

    #[test]
    fn spare_too_small_for_collection_is_refused() {
        let mut p = small("64M", "4M", "16K");
        p.set("page_mapped", "true").unwrap();
        p.set("spare", "0.05").unwrap();
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("fewer than 2 beyond them"), "{e}");
        assert!(p.set("spare", "0.95").is_err());
        p.set("spare", "0.2").unwrap();
        p.validate().unwrap();
        assert_eq!(p.rated_pe_cycles(), 3_000, "mlc by default");
        p.set("cell", "tlc").unwrap();
        assert_eq!(p.rated_pe_cycles(), 1_000);
        p.set("pe_cycles", "5000").unwrap();
        assert_eq!(p.rated_pe_cycles(), 5_000);
    }
}
