//! Every block written carries its own address and the run's nonce, then
//! a stream seeded by both: a block read back from the wrong place names
//! where it came from.

use super::Evidence;

/// The tag's first eight bytes.
const MAGIC: u64 = u64::from_le_bytes(*b"FLCAPv1\0");

/// Fill `buf` with the tags of the blocks at `offset`.
pub(super) fn tag(nonce: u64, offset: u64, block: u64, buf: &mut [u8]) {
    for (i, chunk) in buf.chunks_mut(block as usize).enumerate() {
        let at = offset + i as u64 * block;
        chunk[..8].copy_from_slice(&MAGIC.to_le_bytes());
        chunk[8..16].copy_from_slice(&nonce.to_le_bytes());
        chunk[16..24].copy_from_slice(&at.to_le_bytes());
        let mut s = (nonce ^ at.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
        for w in chunk[24..].chunks_mut(8) {
            let x = crate::random::xorshift(&mut s).to_le_bytes();
            w.copy_from_slice(&x[..w.len()]);
        }
    }
}

/// Whether `block` starts as a tag of the run `nonce`, for any address.
pub(super) fn is_ours(nonce: u64, block: &[u8]) -> bool {
    block.len() >= 16 && block[..8] == MAGIC.to_le_bytes() && block[8..16] == nonce.to_le_bytes()
}

/// Compare what was read at `offset` with its tags: the good bytes before
/// the first wrong block, and what that block held.
pub(super) fn check(nonce: u64, offset: u64, block: u64, got: &[u8], scratch: &mut Vec<u8>) -> (u64, Option<Evidence>) {
    scratch.resize(block as usize, 0);
    for (i, chunk) in got.chunks(block as usize).enumerate() {
        let at = offset + i as u64 * block;
        tag(nonce, at, block, &mut scratch[..chunk.len()]);
        if chunk == &scratch[..chunk.len()] {
            continue;
        }
        let word = |k: usize| u64::from_le_bytes(chunk[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
        let evidence = if chunk.len() >= 24 && is_ours(nonce, chunk) && word(2) != at {
            Evidence::Foreign { from: word(2) }
        } else if chunk.iter().all(|&b| b == 0) {
            Evidence::Zeros
        } else {
            Evidence::Other
        };
        return (i as u64 * block, Some(evidence));
    }
    (got.len() as u64, None)
}
