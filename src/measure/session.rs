//! What a test's command runs in, seen from the tests: the runner above
//! provides it (opening the target, consent, journals, signals, the
//! document and the store are its business), and a test's sequence of
//! steps asks it only for what a test needs. The runner's side is
//! `crate::runner::Runner`; nothing here knows it.

use super::registry::Results;
use super::{MeasureError, Medium, Test};
use crate::target::TargetDescription;

/// What a note is about, so a script (or the store) can pick them out
/// without reading prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// A test that did not run, and why.
    Skipped,
    /// Geometry a writing test took from align rather than the user.
    Geometry,
    /// What the preserving target wrote, restored and verified.
    Restored,
    /// The I/O path differs from what was asked (no O_DIRECT, no io_uring).
    Engine,
    /// The results store could not save the run.
    Store,
}

/// A note or warning for the reader, with what to do about it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Note {
    pub kind: NoteKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The runner, as a test's sequence of steps sees it.
pub trait Session {
    /// The runner's own error (its context: which path, which command).
    type Error: From<MeasureError>;
    fn description(&self) -> &TargetDescription;
    /// Whether flash can show through the target at all.
    fn medium(&self) -> Medium;
    /// What the card and the kernel say the erase block is (for align).
    fn references(&self) -> Vec<(String, u64)>;
    /// A real device or file (not a simulated card).
    fn is_real(&self) -> bool;
    /// The engine asked for: psync runs every request alone.
    fn psync_only(&self) -> bool;
    /// Run one test (its plan checked first) and record its result.
    fn run<T: Test>(&mut self, test: &T) -> Result<T::Output, Self::Error>;
    /// Record what a sequence composes (capacity's verdict from its
    /// stages), and hand it on as a test's result is.
    fn update(&mut self, f: impl FnOnce(&mut Results));
    /// A note in the document (and on stderr when `say`).
    fn note(&mut self, kind: NoteKind, message: String, hint: Option<&str>, say: bool);
}

/// A sequence's own refusal, in the runner's error type.
pub fn refuse<S: Session>(why: impl Into<String>, fix: impl Into<String>) -> S::Error {
    S::Error::from(MeasureError::Bad {
        why: why.into(),
        fix: fix.into(),
    })
}

/// What the writing tests need to know about the target's geometry.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    pub erase: u64,
    /// How sure the erase size is: align's confidence, 1 when given.
    pub erase_confidence: f64,
    pub page: Option<u64>,
    pub block: u64,
    pub size: u64,
}

/// Erase size and page: given by the user, or estimated by align (reads
/// only) first, which says so.
pub fn geometry<S: Session>(s: &mut S, erase: Option<u64>) -> Result<Geometry, S::Error> {
    let d = s.description();
    let (block, size) = (u64::from(d.logical_block_size), d.size_bytes);
    if let Some(erase) = erase {
        return Ok(Geometry {
            erase,
            erase_confidence: 1.0,
            page: None,
            block,
            size,
        });
    }
    let medium = s.medium();
    let a = s.run(&super::align::Align {
        references: Vec::new(),
        medium,
    })?;
    let Some(erase) = a.erase_size_bytes else {
        return Err(refuse::<S>(
            "align could not see the erase size of this target",
            "give it with --erase-size SIZE (for example 4M)",
        ));
    };
    let line = format!(
        "erase size {} from align (confidence {:.2}); --erase-size overrides it",
        crate::units::Iec(erase),
        a.confidence
    );
    s.note(NoteKind::Geometry, line, None, true);
    Ok(Geometry {
        erase,
        erase_confidence: a.confidence,
        page: a.page_size_bytes,
        block,
        size,
    })
}
