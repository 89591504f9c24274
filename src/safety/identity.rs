//! Which device a journal belongs to, beyond its path. A path is not an
//! identity: `/dev/loop2` can be detached and attached to another file of the
//! same size, `/dev/sdb` is whichever card was plugged in last, and most
//! loop devices, files and USB readers have no serial number. So a journal
//! records the size, the file behind the target (a loop device's backing file
//! or the target file itself, by device and inode), the serial or CID where
//! there is one, and a fingerprint: checksums of a few blocks the test never
//! writes. `flashlab restore` checks all of them; only `--force` gets past a
//! difference.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ranges::Range;
use crate::device::stack::{self, FileKey};
use crate::device::{self, sysfs::Host};
use crate::seam::{AlignedBuf, Request, Target};

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
}

impl Identity {
    /// Everything but the fingerprint, from the path and sysfs.
    pub fn of(path: &Path, size_bytes: u64) -> Identity {
        let host = Host::system();
        let mut id = Identity {
            size_bytes,
            ..Identity::default()
        };
        let Ok(meta) = std::fs::metadata(path) else { return id };
        if meta.is_file() {
            id.kind = "file".into();
            id.file = FileKey::of(path);
            return id;
        }
        if !meta.file_type().is_block_device() {
            return id;
        }
        id.kind = "block".into();
        let (ma, mi) = (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev()));
        let whole = stack::whole_disk(&host, ma, mi);
        if let Some(l) = stack::loop_devices(&host)
            .into_iter()
            .find(|l| (l.major, l.minor) == whole)
        {
            id.file = l.backing_key;
            id.backing_file = l.backing.map(|b| b.display().to_string());
        }
        id.serial = device::identify(&host, path, size_bytes, 512, 512)
            .ok()
            .and_then(|i| i.serial);
        id
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
        let mut offsets = Vec::new();
        for i in 0..FINGERPRINT_BLOCKS {
            let mut at = last * i / (FINGERPRINT_BLOCKS - 1) * block;
            // Step past any declared range this block would touch.
            while let Some(r) = declared.iter().find(|r| at < r.end() && r.offset < at + block) {
                at = r.end().next_multiple_of(block);
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
        if self.size_bytes != live.size_bytes {
            out.push(format!("size {} bytes, now {} bytes", self.size_bytes, live.size_bytes));
        }
        if !self.kind.is_empty() && !live.kind.is_empty() && self.kind != live.kind {
            out.push(format!("a {}, now a {}", self.kind, live.kind));
        }
        if let Some(f) = self.file
            && live.file != Some(f)
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
    use crate::sim::{SimTarget, params_from_spec};

    #[test]
    fn the_fingerprint_avoids_declared_ranges_and_sees_other_content() {
        let o = [
            ("capacity".to_string(), "64M".to_string()),
            ("open_aus_random".to_string(), "4".to_string()),
        ];
        let mut t = SimTarget::new("sim:demo", params_from_spec("demo", &o).unwrap());
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
