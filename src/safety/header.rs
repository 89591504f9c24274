//! A journal's header: who the journal belongs to, what it covers, and its
//! place in the order of journals. Read by the journal itself and copied
//! into the register of pending journals ([`super::registry`]).

use serde::{Deserialize, Serialize};

use super::identity::Identity;

/// Who the journal belongs to and what it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Canonical path of the target when the journal was made.
    pub target: String,
    pub size_bytes: u64,
    /// What identifies the target besides its path (checked before restoring).
    pub identity: Identity,
    pub created_unix: u64,
    /// When it was made, in nanoseconds since 1970 (0 in older journals).
    #[serde(default)]
    pub created_ns: u64,
    /// One more than the highest sequence of every pending journal a run
    /// can find when it was made, in any directory ([`super::pending`]; 0
    /// in older journals, whose sequences were counted per directory).
    /// Journals covering the same bytes restore newest first by
    /// ([`Header::order`]), so the oldest journal, which holds the true
    /// original, is written back last.
    #[serde(default)]
    pub sequence: u64,
    pub pid: u32,
    /// `[offset, length]` of each declared range.
    pub ranges: Vec<[u64; 2]>,
    pub total_bytes: u64,
}

impl Header {
    /// Which of two journals was made later: by sequence, then by creation
    /// time (whole seconds in journals older than `created_ns`). Never by
    /// file name.
    pub fn order(&self) -> (u64, u64) {
        let ns = if self.created_ns > 0 {
            self.created_ns
        } else {
            self.created_unix.saturating_mul(1_000_000_000)
        };
        (self.sequence, ns)
    }
}

/// A header for the unit tests of the journal, the registry and the
/// pending list: one 4 KiB range of a 64 MiB "/dev/test" at `ranges`.
#[cfg(test)]
pub(crate) fn sample(created_ns: u64, sequence: u64, ranges: &[[u64; 2]]) -> Header {
    Header {
        target: "/dev/test".into(),
        size_bytes: 64 << 20,
        identity: Identity::default(),
        created_unix: 1,
        created_ns,
        sequence,
        pid: 2,
        ranges: ranges.to_vec(),
        total_bytes: ranges.iter().map(|r| r[1]).sum(),
    }
}
