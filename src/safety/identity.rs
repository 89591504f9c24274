//! Which device a journal belongs to, beyond its path. A path is not an
//! identity: `/dev/loop2` can be detached and attached to another file of the
//! same size, `/dev/sdb` is whichever card was plugged in last, and most
//! loop devices, files and USB readers have no serial number. So a journal
//! records the size, what the target's bytes rest on (its layers, down to a
//! regular file by device and inode or a disk by number, with where the
//! bytes lie in it: see [`crate::identify::stack`]), the serial or CID where
//! there is one, and a fingerprint: checksums of a few blocks the test never
//! writes. `flashlab restore` checks all of them; only `--force` gets past a
//! difference. The layers also find a pending journal whatever name the next
//! run gives the same bytes (another loop number, a hard link, a loop over a
//! loop, the backing file once the loop device is gone).

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ranges::Range;
use crate::identify::stack::{FileKey, Layer, Node, Stack};
use crate::identify::{self, sysfs::Roots};
use crate::targets::{AlignedBuf, Request, Target};

/// Blocks in a fingerprint: spread over the target, so a different device
/// that shares a partition table or a filesystem header still differs.
const FINGERPRINT_BLOCKS: u64 = 8;
/// Bytes per fingerprint block (or the logical block, if larger).
const FINGERPRINT_BLOCK: u64 = 4096;

/// One fingerprint block: where, how long, and the CRC-32 of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub offset: u64,
    pub len: u32,
    pub crc32: u32,
}

/// What identifies a target besides its path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// "block" or "file".
    pub kind: String,
    pub size_bytes: u64,
    /// The regular file holding the bytes: the target itself, or the backing
    /// file of a loop device.
    pub file: Option<FileKey>,
    /// Where that file was, for messages.
    pub backing_file: Option<String>,
    /// The device's serial number, or its CID serial for an SD/MMC card.
    pub serial: Option<String>,
    pub fingerprint: Vec<Sample>,
    /// What the bytes rest on, the target first (empty in journals of
    /// earlier versions, which are matched by path and file instead).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<Layer>,
}

impl Identity {
    /// Everything but the fingerprint, from the path and sysfs.
    pub fn of(path: &Path, size_bytes: u64) -> Identity {
        let roots = Roots::system();
        let mut id = Identity {
            size_bytes,
            ..Identity::default()
        };
        let Ok(meta) = std::fs::metadata(path) else { return id };
        if meta.is_file() {
            id.kind = "file".into();
        } else if meta.file_type().is_block_device() {
            id.kind = "block".into();
            id.serial = identify::identify(&roots, path, size_bytes, 512, 512)
                .ok()
                .and_then(|i| i.reported.serial);
        } else {
            return id;
        }
        let stack = Stack::read(&roots);
        id.layers = stack.layers_of(path);
        // The regular file under it all, for messages and older journals.
        if let Some(f) = id.layers.iter().find_map(|l| l.node.file_key()) {
            id.file = Some(f);
            if !meta.is_file() {
                id.backing_file = Some(stack.name(Node::file(f)));
            }
        }
        id
    }

    /// The layers a restore or a pending-journal check can rely on: the
    /// bottoms (regular files, disks), whose identity outlives the number
    /// of a loop device attached over them.
    fn bottoms(&self) -> impl Iterator<Item = &Layer> {
        self.layers.iter().filter(|l| l.bottom)
    }

    /// Whether the bytes of `ranges` (journalled from this identity's
    /// target) are among the bytes of `live` (another target's layers now),
    /// whatever path either has. An identity without layers (an older
    /// journal) never matches here.
    pub fn covers_bytes_of(&self, ranges: &[[u64; 2]], live: &[Layer]) -> bool {
        self.bottoms().any(|b| {
            ranges.iter().any(|&[o, l]| {
                let e = b.extent.sub(o, l);
                live.iter().any(|x| x.node == b.node && x.extent.overlaps(&e))
            })
        })
    }

    /// Whether `live` shows this identity's bytes at the same offsets: the
    /// same file or disk under both, from the same byte (a loop device's
    /// journal restored onto its backing file, or onto another loop device
    /// over it).
    pub fn same_offsets(&self, live: &[Layer]) -> bool {
        self.bottoms().any(|b| {
            live.iter()
                .any(|x| x.node == b.node && x.extent.start == b.extent.start)
        })
    }

    /// Take the fingerprint through `reader`, away from the `declared` ranges
    /// (which the test may change). Blocks that cannot be read are left out.
    pub fn take_fingerprint(&mut self, reader: &mut dyn Target, declared: &[Range]) {
        let d = reader.description();
        let size = d.size_bytes;
        let block = FINGERPRINT_BLOCK.max(u64::from(d.logical_block_size));
        if size < block {
            return;
        }
        let last = (size - block) / block;
        // The declared ranges sorted and merged, so a block steps past them
        // in one walk: searched from the start at each step, a bench area of
        // 65536 pieces that touch took 2^31 comparisons a block.
        let mut spans: Vec<(u64, u64)> = declared.iter().map(|r| (r.offset, r.end())).collect();
        spans.sort_unstable();
        spans.dedup_by(|next, kept| {
            let overlaps = next.0 < kept.1;
            if overlaps {
                kept.1 = kept.1.max(next.1);
            }
            overlaps
        });
        let mut offsets = Vec::new();
        for i in 0..FINGERPRINT_BLOCKS {
            let mut at = last * i / (FINGERPRINT_BLOCKS - 1) * block;
            // Step past any declared range this block would touch.
            let mut k = spans.partition_point(|&(_, end)| end <= at);
            while let Some(&(start, end)) = spans.get(k)
                && start < at + block
            {
                at = at.max(end.next_multiple_of(block));
                k += 1;
            }
            if at + block <= size && !offsets.contains(&at) {
                offsets.push(at);
            }
        }
        self.fingerprint = read_samples(reader, &offsets, block as u32);
    }

    /// How `live` (the target as it is now, fingerprinted at this identity's
    /// offsets with [`Identity::reread`]) differs from this one; empty when it
    /// is the same target.
    pub fn differences(&self, live: &Identity) -> Vec<String> {
        let mut out = Vec::new();
        // The same file or disk at the same offsets is the same bytes under
        // another name: a loop device over the file, the file itself.
        let same_bytes = !self.layers.is_empty() && self.same_offsets(&live.layers);
        let shifted = self
            .bottoms()
            .find_map(|b| live.layers.iter().find(|x| x.node == b.node).map(|x| (b, x)));
        if let (false, Some((b, x))) = (same_bytes, shifted) {
            out.push(format!(
                "its bytes start at byte {} of {}, this target's at byte {}: another part of it",
                b.extent.start,
                describe(b.node),
                x.extent.start
            ));
        } else if !self.layers.is_empty() && !same_bytes {
            let was = self.bottoms().map(|l| describe(l.node)).collect::<Vec<_>>().join(", ");
            let now = live
                .layers
                .iter()
                .filter(|l| l.bottom)
                .map(|l| describe(l.node))
                .collect::<Vec<_>>()
                .join(", ");
            out.push(format!("its bytes were on {was}, now on {now}"));
        }
        if self.size_bytes != live.size_bytes && !same_bytes {
            out.push(format!("size {} bytes, now {} bytes", self.size_bytes, live.size_bytes));
        }
        if !self.kind.is_empty() && !live.kind.is_empty() && self.kind != live.kind && !same_bytes {
            out.push(format!("a {}, now a {}", self.kind, live.kind));
        }
        if let Some(f) = self.file
            && live.file != Some(f)
            && self.layers.is_empty()
        {
            out.push(format!(
                "backed by {} (inode {}), now by {}",
                self.backing_file.as_deref().unwrap_or("a file"),
                f.ino,
                match (&live.backing_file, live.file) {
                    (Some(b), Some(k)) => format!("{b} (inode {})", k.ino),
                    (None, Some(k)) => format!("inode {}", k.ino),
                    _ => "no file".to_string(),
                }
            ));
        }
        if let Some(s) = &self.serial
            && live.serial.as_ref() != Some(s)
        {
            out.push(format!("serial {s}, now {}", live.serial.as_deref().unwrap_or("none")));
        }
        let changed: Vec<u64> = self
            .fingerprint
            .iter()
            .filter(|s| !live.fingerprint.contains(s))
            .map(|s| s.offset)
            .collect();
        if !changed.is_empty() {
            out.push(format!(
                "{} of {} fingerprint blocks differ (first at byte {}); the test never writes them",
                changed.len(),
                self.fingerprint.len(),
                changed[0]
            ));
        }
        out
    }

    /// Read the blocks of `self.fingerprint` again from `reader`.
    pub fn reread(&self, reader: &mut dyn Target) -> Vec<Sample> {
        let size = reader.description().size_bytes;
        self.fingerprint
            .iter()
            .filter(|s| s.offset + u64::from(s.len) <= size)
            .flat_map(|s| read_samples(reader, &[s.offset], s.len))
            .collect()
    }
}

/// A node in a difference: a disk by number, a file by inode.
fn describe(n: Node) -> String {
    match n {
        Node::Device { major, minor } => format!("block device {major}:{minor}"),
        Node::File { ino, .. } => format!("the file with inode {ino}"),
    }
}

fn read_samples(reader: &mut dyn Target, offsets: &[u64], len: u32) -> Vec<Sample> {
    let mut buf = AlignedBuf::new(len as usize);
    offsets
        .iter()
        .filter_map(|&offset| {
            let done = reader.run(&[Request::read(offset, len, 0)], 1, &mut buf).ok()?;
            done[0].errno.is_none().then(|| Sample {
                offset,
                len,
                crc32: crc32fast::hash(buf.as_slice()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;

    #[test]
    fn the_fingerprint_avoids_declared_ranges_and_sees_other_content() {
        let mut t = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
        let mut buf = AlignedBuf::new(64 << 10);
        buf.as_mut_slice()
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8);
        for k in 0..1024u64 {
            t.run(&[Request::write(k << 16, 64 << 10, 0)], 1, &mut buf).unwrap();
        }
        let declared = [Range {
            offset: 0,
            len: 8 << 20,
        }];
        let mut id = Identity {
            size_bytes: 64 << 20,
            ..Identity::default()
        };
        id.take_fingerprint(&mut t, &declared);
        assert_eq!(id.fingerprint.len(), 8);
        // The same bytes declared as pieces that touch, out of order: the
        // same blocks.
        let pieces: Vec<Range> = (0..16u64)
            .rev()
            .map(|k| Range {
                offset: k << 19,
                len: 1 << 19,
            })
            .collect();
        let mut by_pieces = id.clone();
        by_pieces.take_fingerprint(&mut t, &pieces);
        let at = |i: &Identity| i.fingerprint.iter().map(|s| s.offset).collect::<Vec<_>>();
        assert_eq!(at(&by_pieces), at(&id));
        assert!(
            id.fingerprint
                .iter()
                .all(|s| s.offset >= 8 << 20 && s.offset + 4096 <= 64 << 20)
        );
        let same = Identity {
            fingerprint: id.reread(&mut t),
            ..id.clone()
        };
        assert!(id.differences(&same).is_empty());
        // Another "device": one fingerprint block changed.
        buf.as_mut_slice()[0] ^= 1;
        t.run(&[Request::write(id.fingerprint[3].offset, 4096, 0)], 1, &mut buf)
            .unwrap();
        let other = Identity {
            fingerprint: id.reread(&mut t),
            serial: Some("x".into()),
            ..id.clone()
        };
        let d = id.differences(&other);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].starts_with("1 of 8 fingerprint blocks differ"), "{d:?}");
        let moved = Identity {
            file: Some(FileKey { dev: 1, ino: 2 }),
            size_bytes: 1,
            ..id.clone()
        };
        let with_file = Identity {
            file: Some(FileKey { dev: 1, ino: 3 }),
            ..id.clone()
        };
        assert_eq!(with_file.differences(&moved).len(), 2, "size and backing file");
    }
}
