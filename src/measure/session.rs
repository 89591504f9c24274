//! What the tests' sequences of steps share: the geometry the writing
//! tests start from (given, or align's), and a refusal in the runner's
//! error type. A test's steps take [`Session`] from the registry, where it
//! is defined, and not through here: this module runs align, so align
//! using it would make the two use each other.

use super::MeasureError;
use super::note::NoteKind;
use super::registry::Session;

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
    if let Some(why) = a.claim.why() {
        return Err(refuse::<S>(
            format!("align claims no erase size: {why}"),
            "--erase-size SIZE (for example 4M) runs it anyway; on such a target it measures and claims nothing",
        ));
    }
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
