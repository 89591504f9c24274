//! Sparse data of a simulated card: memory follows what was written, not capacity.
//! Blocks of one repeated byte (the usual test fill) are stored as that byte, and
//! whole blocks whose contents were seen before (a test pattern written over and
//! over) share one copy.

use std::collections::HashMap;
use std::sync::Arc;

/// Granularity of the store.
pub const CHUNK: u64 = 4096;

#[derive(Debug, Clone)]
enum Chunk {
    Fill(u8),
    /// A whole block; shared with every other block of the same contents until
    /// one of them is partly overwritten (copy on write).
    Data(Arc<[u8]>),
}

#[derive(Debug, Clone, Default)]
pub struct Store {
    chunks: HashMap<u64, Chunk>,
    /// Whole-block contents by hash, for sharing.
    pool: HashMap<u64, Arc<[u8]>>,
}

/// A fast non-cryptographic hash of one block (equal hashes are confirmed by
/// comparing the bytes, so collisions only cost a copy).
fn block_hash(b: &[u8]) -> u64 {
    let mut h = 0x243f_6a88_85a3_08d3u64;
    for w in b.chunks_exact(8) {
        let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
    h
}

impl Store {
    /// Copy `data` in at byte `off` (any sector-aligned offset).
    pub fn write(&mut self, mut off: u64, mut data: &[u8], erased: u8) {
        while !data.is_empty() {
            let idx = off / CHUNK;
            let within = (off % CHUNK) as usize;
            let n = data.len().min(CHUNK as usize - within);
            let piece = &data[..n];
            let uniform = piece.iter().all(|&b| b == piece[0]);
            if within == 0 && n == CHUNK as usize && uniform && piece[0] == erased {
                // Reads back as never written: no entry. A restore writes
                // the erased originals of every piece a test touched, and
                // kept as fills they grew with the area written.
                if let Some(old) = self.chunks.remove(&idx) {
                    self.release(old);
                }
            } else if within == 0 && n == CHUNK as usize {
                let new = if uniform {
                    Chunk::Fill(piece[0])
                } else {
                    Chunk::Data(self.shared(piece))
                };
                if let Some(old) = self.chunks.insert(idx, new) {
                    self.release(old);
                }
            } else {
                let entry = self.chunks.entry(idx).or_insert(Chunk::Fill(erased));
                if let Chunk::Fill(b) = *entry {
                    if uniform && piece[0] == b {
                        off += n as u64;
                        data = &data[n..];
                        continue;
                    }
                    *entry = Chunk::Data(Arc::from(vec![b; CHUNK as usize]));
                }
                if let Chunk::Data(bytes) = entry {
                    if Arc::strong_count(bytes) > 1 {
                        // Shared (the pool holds one reference): copy on write.
                        let old = std::mem::replace(bytes, Arc::from(&bytes[..]));
                        let old = Chunk::Data(old);
                        if let Some(Chunk::Data(b)) = self.chunks.get_mut(&idx) {
                            Arc::get_mut(b).expect("fresh copy")[within..within + n].copy_from_slice(piece);
                        }
                        self.release(old);
                    } else {
                        Arc::get_mut(bytes).expect("unshared")[within..within + n].copy_from_slice(piece);
                    }
                }
            }
            off += n as u64;
            data = &data[n..];
        }
    }

    /// The pool's copy of a block with these contents, adding it if new.
    fn shared(&mut self, piece: &[u8]) -> Arc<[u8]> {
        let h = block_hash(piece);
        match self.pool.get(&h) {
            Some(b) if &b[..] == piece => b.clone(),
            Some(_) => Arc::from(piece),
            None => {
                let b: Arc<[u8]> = Arc::from(piece);
                self.pool.insert(h, b.clone());
                b
            }
        }
    }

    /// Forget a replaced block; drop its pooled copy once nothing uses it.
    fn release(&mut self, old: Chunk) {
        if let Chunk::Data(b) = old
            && Arc::strong_count(&b) == 2
        {
            let h = block_hash(&b);
            if self.pool.get(&h).is_some_and(|p| Arc::ptr_eq(p, &b)) {
                self.pool.remove(&h);
            }
        }
    }

    /// Forget the whole blocks of `len` bytes at `off`: they read as never
    /// written. A block the range covers only in part keeps its data (a
    /// discard need not clear what it does not free).
    pub fn forget(&mut self, off: u64, len: u64) {
        let first = off.div_ceil(CHUNK);
        let end = off.saturating_add(len) / CHUNK;
        if end <= first {
            return;
        }
        // A discard of a whole card is mostly blocks never written: walk
        // the written ones when they are fewer.
        let held: Vec<u64> = if end - first > self.chunks.len() as u64 {
            self.chunks
                .keys()
                .copied()
                .filter(|k| (first..end).contains(k))
                .collect()
        } else {
            (first..end).filter(|k| self.chunks.contains_key(k)).collect()
        };
        for k in held {
            if let Some(old) = self.chunks.remove(&k) {
                self.release(old);
            }
        }
    }

    /// Fill `out` from byte `off`; never-written bytes read as `erased`.
    pub fn read(&self, mut off: u64, mut out: &mut [u8], erased: u8) {
        while !out.is_empty() {
            let idx = off / CHUNK;
            let within = (off % CHUNK) as usize;
            let n = out.len().min(CHUNK as usize - within);
            let (head, tail) = std::mem::take(&mut out).split_at_mut(n);
            match self.chunks.get(&idx) {
                None => head.fill(erased),
                Some(Chunk::Fill(b)) => head.fill(*b),
                Some(Chunk::Data(bytes)) => head.copy_from_slice(&bytes[within..within + n]),
            }
            off += n as u64;
            out = tail;
        }
    }

    /// Bytes of heap holding data (for the memory goal): each distinct block once.
    pub fn data_bytes(&self) -> u64 {
        let mut seen = std::collections::HashSet::new();
        self.chunks
            .values()
            .filter_map(|c| match c {
                Chunk::Data(b) => Some(Arc::as_ptr(b) as *const u8 as usize),
                Chunk::Fill(_) => None,
            })
            .filter(|p| seen.insert(*p))
            .count() as u64
            * CHUNK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_and_fills_stay_small() {
        let mut s = Store::default();
        let mut out = vec![1u8; 8192];
        s.read(1 << 40, &mut out, 0xff);
        assert!(out.iter().all(|&b| b == 0xff));
        s.write(4096, &[0u8; 1 << 20], 0xff);
        assert_eq!(s.data_bytes(), 0);
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        s.write(512, &data, 0xff);
        let mut back = vec![0u8; 10_000];
        s.read(512, &mut back, 0xff);
        assert_eq!(back, data);
        let mut head = vec![0u8; 512];
        s.read(0, &mut head, 0xff);
        assert!(head.iter().all(|&b| b == 0xff), "bytes before the write stay erased");
    }

    /// A restore writes the erased bytes back over every piece a test
    /// wrote: the store is then as small as before the test.
    #[test]
    fn erased_bytes_written_back_leave_no_entry() {
        let mut s = Store::default();
        let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 13 % 251) as u8).collect();
        for i in 0..64u64 {
            s.write(i << 30, &data, 0xff);
        }
        assert_eq!(s.chunks.len(), 64 * 256);
        for i in 0..64u64 {
            s.write(i << 30, &[0xff; 1 << 20], 0xff);
        }
        assert_eq!((s.chunks.len(), s.pool.len()), (0, 0));
        let mut back = vec![0u8; 4096];
        s.read(5 << 30, &mut back, 0xff);
        assert!(back.iter().all(|&b| b == 0xff));
    }

    #[test]
    fn repeated_patterns_share_one_copy_until_changed() {
        let mut s = Store::default();
        let pattern: Vec<u8> = (0..65536u32).map(|i| (i * 31 % 251) as u8).collect();
        for i in 0..100u64 {
            s.write(i << 20, &pattern, 0);
        }
        assert_eq!(s.data_bytes(), 65536, "100 copies of a 64 KiB pattern cost one");
        s.write((5 << 20) + 100, &[0xee; 10], 0);
        assert_eq!(s.data_bytes(), 65536 + 4096, "a changed block gets its own copy");
        let mut back = vec![0u8; 65536];
        s.read(6 << 20, &mut back, 0);
        assert_eq!(back, pattern, "other copies unchanged");
        s.read(5 << 20, &mut back, 0);
        assert_eq!(&back[100..110], &[0xee; 10]);
        assert_eq!(&back[..100], &pattern[..100]);
    }

    proptest::proptest! {
        #[test]
        fn no_write_is_lost(writes in proptest::collection::vec((0u64..64, 1usize..20, proptest::num::u8::ANY), 1..40)) {
            let mut s = Store::default();
            let mut model = vec![0u8; 64 * 512 + 20 * 512];
            for (sector, n, byte) in writes {
                let data: Vec<u8> = (0..n * 512).map(|i| byte.wrapping_add((i / 700) as u8)).collect();
                s.write(sector * 512, &data, 0);
                model[sector as usize * 512..sector as usize * 512 + data.len()].copy_from_slice(&data);
            }
            let mut back = vec![0u8; model.len()];
            s.read(0, &mut back, 0);
            proptest::prop_assert_eq!(back, model);
        }
    }
}
