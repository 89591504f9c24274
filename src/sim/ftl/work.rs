//! The flash work a card did, by cause, as exact integers: what wears it out.
//! A trace replayed on the model (`life`) reads this, and so do `sim` runs
//! and `emulate`'s summary.

use serde::{Deserialize, Serialize};

/// Pages and erases since the card was made, each counted once by the cause
/// that paid it. Write amplification is [`FlashWork::amplification`]: every
/// page the flash programmed over the pages the host's bytes fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FlashWork {
    /// Pages programmed for the host's writes, each partly covered edge
    /// page counted once (it is read, merged and programmed whole).
    pub host_pages: u64,
    /// Of `host_pages`, the partly covered edge pages: each a
    /// read-modify-write of a whole page.
    pub rmw_pages: u64,
    /// Pages copied by AU merges: the valid rest of an AU closed (before and
    /// after what its log holds), and the pages an in-order log skipped over.
    pub merge_copies: u64,
    /// Pages copied by page-mapped garbage collection (a `page_mapped` card,
    /// or the FAT area, once its spare blocks run out).
    pub gc_copies: u64,
    /// Pages copied by static wear levelling: cold data moved off blocks
    /// that wore least.
    pub wear_copies: u64,
    /// Erase blocks erased, for any cause.
    pub erases: u64,
    /// AUs closed by copying their valid pages (the merges that make
    /// cheap cards collapse).
    pub merges: u64,
    /// Logs written in order to their AU's end that replaced the data block
    /// whole: only the old block's erase was paid.
    pub switch_merges: u64,
    /// Blocks page-mapped garbage collection emptied.
    pub collections: u64,
}

impl FlashWork {
    /// Every page the flash programmed: the host's, and the copies.
    pub fn flash_pages(&self) -> u64 {
        self.host_pages + self.merge_copies + self.gc_copies + self.wear_copies
    }

    /// The work done since `earlier`, a snapshot of the same card: every
    /// count only grows, so each is a difference.
    pub fn since(&self, earlier: &FlashWork) -> FlashWork {
        FlashWork {
            host_pages: self.host_pages - earlier.host_pages,
            rmw_pages: self.rmw_pages - earlier.rmw_pages,
            merge_copies: self.merge_copies - earlier.merge_copies,
            gc_copies: self.gc_copies - earlier.gc_copies,
            wear_copies: self.wear_copies - earlier.wear_copies,
            erases: self.erases - earlier.erases,
            merges: self.merges - earlier.merges,
            switch_merges: self.switch_merges - earlier.switch_merges,
            collections: self.collections - earlier.collections,
        }
    }

    /// Flash bytes programmed over `host_bytes` written, for pages of
    /// `page_size`; `None` before the host wrote anything.
    pub fn amplification(&self, page_size: u64, host_bytes: u64) -> Option<f64> {
        (host_bytes > 0).then(|| self.flash_pages() as f64 * page_size as f64 / host_bytes as f64)
    }
}

/// A simulated card's flash work at the end of a run, as its document
/// carries it (`flash_work`): the counts by cause, and what they come to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlashReport {
    #[serde(flatten)]
    pub work: FlashWork,
    pub page_size_bytes: u64,
    /// What the host wrote, the journal's writes back included: the card
    /// took them too.
    pub host_bytes_written: u64,
    /// Every page programmed, in bytes (the name `life` gives it too).
    pub flash_bytes_written: u64,
    /// Flash bytes programmed over host bytes written.
    pub amplification: Option<f64>,
    /// The card's physical erase blocks (spare ones included), those
    /// erased at least once, the most erases any one took, and the erases
    /// over all of them: the spread wear levelling decides.
    pub blocks: u64,
    pub blocks_erased: u64,
    pub most_erases: u64,
    pub mean_erases: f64,
    /// What one block is rated for (`pe_cycles`, or the cell type's).
    pub rated_pe_cycles: u64,
}
