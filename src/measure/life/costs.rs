//! What costs most: each write's flash pages (its own and the merges and
//! collections it set off) charged to its request size and the AU it
//! wrote, then adjacent AUs written by requests of one size joined into
//! regions. "4 KiB writes at 1.20-1.26 GiB cause 71% of flash writes"
//! points at the file or journal behind them.

use serde::{Deserialize, Serialize};

use crate::sim::ftl::wear::NumberMap;

/// Regions listed at most.
const LISTED: usize = 3;

/// A region smaller than this share of the flash writes is not listed.
const LEAST_SHARE: f64 = 0.01;

/// One region of the card and one request size, with what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// The requests' size, rounded up to a power of two: "4 KiB writes"
    /// are those of 2 KiB + 1 byte to 4 KiB.
    pub request_bytes: u64,
    /// The region: whole AUs, first byte and the byte past the last.
    pub from_byte: u64,
    pub to_byte: u64,
    pub flash_bytes: u64,
    /// Of all flash bytes the pass wrote.
    pub share: f64,
}

/// Flash pages by (AU, size class).
#[derive(Debug, Clone, Default)]
pub struct Costs {
    au_size: u64,
    pages: NumberMap<u64>,
}

/// Size classes: 2^0 to 2^63 bytes fit in 6 bits of the key.
const CLASS_BITS: u32 = 6;

impl Costs {
    /// A write of `len` bytes at `offset` cost `pages` flash pages.
    pub fn add(&mut self, au_size: u64, offset: u64, len: u64, pages: u64) {
        if pages == 0 || len == 0 {
            return;
        }
        self.au_size = au_size;
        let class = u64::from(len.next_power_of_two().trailing_zeros());
        let key = (offset / au_size) << CLASS_BITS | class;
        *self.pages.entry(key).or_insert(0) += pages;
    }

    /// The costliest regions, most first, of `total_pages` of `page_size`.
    pub fn most(&self, total_pages: u64, page_size: u64) -> Vec<Cost> {
        if total_pages == 0 {
            return Vec::new();
        }
        let mut cells: Vec<(u64, u64, u64)> = self
            .pages
            .iter()
            .map(|(&k, &n)| (k & ((1 << CLASS_BITS) - 1), k >> CLASS_BITS, n))
            .collect();
        cells.sort_unstable();
        // Runs of adjacent AUs in one size class.
        let mut runs: Vec<(u64, u64, u64, u64)> = Vec::new();
        for (class, au, n) in cells {
            match runs.last_mut() {
                Some((c, _, last, sum)) if *c == class && *last + 1 == au => {
                    *last = au;
                    *sum += n;
                }
                _ => runs.push((class, au, au, n)),
            }
        }
        runs.sort_by(|a, b| b.3.cmp(&a.3).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        runs.into_iter()
            .map(|(class, first, last, n)| Cost {
                request_bytes: 1 << class,
                from_byte: first * self.au_size,
                to_byte: (last + 1) * self.au_size,
                flash_bytes: n * page_size,
                share: n as f64 / total_pages as f64,
            })
            .filter(|c| c.share >= LEAST_SHARE)
            .take(LISTED)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_aus_of_one_size_join_and_the_costliest_comes_first() {
        let mut c = Costs::default();
        let au = 4 << 20;
        c.add(au, 10 * au, 4096, 100);
        c.add(au, 11 * au + 8192, 4096, 50);
        c.add(au, 11 * au, 3000, 10);
        c.add(au, 40 * au, 1 << 20, 30);
        c.add(au, 12 * au, 4096, 0);
        let most = c.most(190, 16384);
        assert_eq!(
            most,
            vec![
                Cost {
                    request_bytes: 4096,
                    from_byte: 10 * au,
                    to_byte: 12 * au,
                    flash_bytes: 160 * 16384,
                    share: 160.0 / 190.0,
                },
                Cost {
                    request_bytes: 1 << 20,
                    from_byte: 40 * au,
                    to_byte: 41 * au,
                    flash_bytes: 30 * 16384,
                    share: 30.0 / 190.0,
                },
            ]
        );
    }
}
