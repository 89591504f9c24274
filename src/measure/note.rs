//! Notes and warnings a run carries beside its results.

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
    /// How another tool's output was read, and where it misleads.
    Import,
    /// What a block trace capture may hold beside the device's own I/O.
    Capture,
    /// A batch label for a place no device given was in.
    Label,
}

/// A note or warning for the reader, with what to do about it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Note {
    pub kind: NoteKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}
