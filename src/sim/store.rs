//! Sparse data of a simulated card: memory follows what was written, not capacity.
//! Blocks of one repeated byte (the usual test fill) are stored as that byte.

use std::collections::HashMap;

/// Granularity of the store.
pub const CHUNK: u64 = 4096;

#[derive(Debug, Clone)]
enum Chunk {
    Fill(u8),
    Data(Box<[u8]>),
}

#[derive(Debug, Clone, Default)]
pub struct Store {
    chunks: HashMap<u64, Chunk>,
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
            if within == 0 && n == CHUNK as usize && uniform {
                self.chunks.insert(idx, Chunk::Fill(piece[0]));
            } else {
                let entry = self.chunks.entry(idx).or_insert(Chunk::Fill(erased));
                if let Chunk::Fill(b) = *entry {
                    if uniform && piece[0] == b {
                        off += n as u64;
                        data = &data[n..];
                        continue;
                    }
                    *entry = Chunk::Data(vec![b; CHUNK as usize].into_boxed_slice());
                }
                if let Chunk::Data(bytes) = entry {
                    bytes[within..within + n].copy_from_slice(piece);
                }
            }
            off += n as u64;
            data = &data[n..];
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

    /// Bytes of heap holding data (for the memory goal).
    pub fn data_bytes(&self) -> u64 {
        self.chunks
            .values()
            .map(|c| if let Chunk::Data(_) = c { CHUNK } else { 0 })
            .sum()
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
