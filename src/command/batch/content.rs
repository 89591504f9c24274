//! A card known by what it holds. A USB reader hides the card's CID, so
//! a card moved to another slot has another identity key; the blocks it
//! holds come with it. A row carries a fingerprint of them, read before any
//! test writes; and a card whose earlier run's journal waits under another
//! slot (pulled from one reader, put into another) is recognised by that
//! journal's own fingerprint (blocks the test never writes) and not
//! tested here: testing it would journal the crashed run's pattern as its
//! original.

use crate::args::TargetArg;
use crate::runner::writable::Consent;
use crate::safety::identity::Identity;
use crate::targets::real::EngineChoice;

/// The content fingerprint of a device: the CRC-32 of its fingerprint
/// blocks' CRC-32s, as `crc32:XXXXXXXX`, and whether every block was blank
/// (all zeros or all ones: a new or erased card, which says nothing of
/// which card it is). None for a simulated card or one that cannot be read.
pub struct Content {
    pub fingerprint: String,
    pub blank: bool,
}

impl Content {
    pub fn read(t: &TargetArg, engine: EngineChoice) -> Option<Content> {
        let crate::args::Resolved::Path(_) = &t.resolved else {
            return None;
        };
        let mut opened = crate::runner::open::read_only(t, engine).ok()?;
        let mut id = Identity::default();
        id.take_fingerprint(opened.as_target_mut(), &[]);
        if id.fingerprint.is_empty() {
            return None;
        }
        let mut h = crc32fast::Hasher::new();
        for s in &id.fingerprint {
            h.update(&s.crc32.to_le_bytes());
        }
        Some(Content {
            fingerprint: format!("crc32:{:08x}", h.finalize()),
            blank: id.fingerprint.iter().all(|s| is_blank(s.crc32, s.len)),
        })
    }

    /// The row's fingerprint: None where it is blank.
    pub fn shown(&self) -> Option<String> {
        (!self.blank).then(|| self.fingerprint.clone())
    }
}

/// Whether a block's CRC-32 is that of `len` zero bytes or `len` 0xff
/// bytes: a block never written, or erased.
fn is_blank(crc: u32, len: u32) -> bool {
    let of = |b: u8| crc32fast::hash(&vec![b; len as usize]);
    crc == of(0) || crc == of(0xff)
}

/// A pending journal made under another path whose fingerprint this
/// device holds: the same card in another slot (blank fingerprints, which
/// any new card holds, never count). Why the row waits, or None.
pub fn moved_here(t: &TargetArg, engine: EngineChoice, consent: &Consent) -> Option<String> {
    let crate::args::Resolved::Path(path) = &t.resolved else {
        return None;
    };
    let live = Identity::of(path, 0);
    let mut opened = crate::runner::open::read_only(t, engine).ok()?;
    let size = opened.as_target().description().size_bytes;
    crate::safety::pending::list_all(&consent.journal_dirs())
        .into_iter()
        .filter(|f| !f.out_of_reach && !f.is_live() && !f.covers(path, &live))
        .find_map(|f| {
            let h = f.header.as_ref().ok()?;
            let id = &h.identity;
            let telling = id.fingerprint.iter().filter(|s| !is_blank(s.crc32, s.len)).count();
            if id.size_bytes != size || telling < 2 || id.reread(opened.as_target_mut()) != id.fingerprint {
                return None;
            }
            Some(format!(
                "this card's earlier run, in {}, did not finish and its journal waits ({}); put the card back \
                 there and test it again (or run `flashlab restore {}` with it there), so its data comes back \
                 first",
                h.target,
                f.path.display(),
                crate::console::shell_word(&h.target)
            ))
        })
}
