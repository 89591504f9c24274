//! The access patterns flashbench uses (Arnd Bergmann's flashbench, `--open-au
//! --random` and `--find-fat`), shared by the tests in `measure` and by the
//! reproductions of the seeds in `sim::reproduce`, so neither imports the
//! other.

/// One step of flashbench's Galois-style LFSR over `bits` bits (8..=16). Each
/// polynomial is maximal, so 2^bits - 1 steps visit every non-zero value
/// once; the taps are those of flashbench (x^8+x^6+x^5+x^4+1, x^9+x^5+1,
/// ...). As flashbench does since "fix random generator to also include 0"
/// (16 Feb 2011, the version seeds 003 and 004 ran), the start value steps
/// to 0 and 0 steps to the start's successor, so the cycle covers all 2^bits
/// values with 0 last.
pub fn lfsr(v: u32, bits: u32) -> u32 {
    let start = ((1 << bits) - 1) & 0xace1;
    if v == start {
        return 0;
    }
    let v = if v == 0 { start } else { v };
    let taps: &[u32] = match bits {
        8 => &[0, 2, 3, 4],
        9 => &[0, 4],
        10 => &[0, 3],
        11 => &[0, 2],
        12 => &[0, 1, 2, 8],
        13 => &[0, 1, 2, 5],
        14 => &[0, 1, 2, 12],
        15 => &[0, 1],
        _ => &[0, 2, 3, 5],
    };
    let bit = taps.iter().fold(0, |acc, t| acc ^ (v >> t)) & 1;
    (v >> 1) | (bit << (bits - 1))
}

/// flashbench's pseudorandom positions: each of 0..num once, in LFSR order,
/// 0 last (flashbench's off_rand after the Feb 2011 fix: values at or past
/// `num` are skipped, so nothing lands outside the range).
pub fn lfsr_positions(num: u64) -> Vec<u64> {
    let bits = (64 - num.leading_zeros()).max(8);
    let mut pos = 0u32;
    (0..num)
        .map(|_| {
            loop {
                pos = lfsr(pos, bits);
                if u64::from(pos) < num {
                    break;
                }
            }
            u64::from(pos)
        })
        .collect()
}

/// A number no other run has had: the clock's nanoseconds with the process
/// id in the high bits, odd so it is never 0. The runner reads the clock
/// for a run's own number (the tests take it from there), and a store for
/// its station's name.
pub fn nonce() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 40) | 1
}

/// One step of a seeded xorshift64 (Marsaglia's 13, 7, 17): the random
/// offsets of bench, the cards of the generator and the property tests.
pub fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// Chunk sizes flashbench walks: the erase size halving down to the block size.
pub fn chunk_sizes(erase: u64, block: u64) -> Vec<u64> {
    std::iter::successors(Some(erase), |c| (c / 2 >= block).then_some(c / 2)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lfsr_is_maximal_and_positions_cover_the_range() {
        for bits in 8..=16 {
            let mut v = 0;
            let mut seen = std::collections::HashSet::new();
            for _ in 0..1u32 << bits {
                v = lfsr(v, bits);
                assert!(v < 1 << bits);
                seen.insert(v);
            }
            assert_eq!(seen.len(), 1usize << bits, "bits {bits}: every value once");
            assert_eq!(v, 0, "bits {bits}: 0 comes last");
        }
        for num in [1, 7, 256, 300, 4096] {
            let p = lfsr_positions(num);
            assert_eq!(p.last(), Some(&0), "{num}: 0 last");
            let mut s = p.clone();
            s.sort_unstable();
            assert_eq!(
                s,
                (0..num).collect::<Vec<_>>(),
                "{num}: each position once, none outside"
            );
        }
        assert_eq!(chunk_sizes(4 << 20, 16 << 10).len(), 9);
    }
}
