//! What a line of probe's one-screen summary is about: a layer below the
//! tests that write the lines and `results list` that picks them.

/// What a line of the one-screen summary is about: `results list` picks
/// lines by it, and its label is what the text prints before the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    Device,
    /// What stands in for the erase block where no geometry is claimed.
    Geometry,
    EraseBlock,
    OpenAus,
    FatArea,
    Capacity,
    Classes,
    Speeds,
}

impl Topic {
    pub fn label(self) -> &'static str {
        match self {
            Topic::Device => "device",
            Topic::Geometry => "geometry",
            Topic::EraseBlock => "erase block",
            Topic::OpenAus => "open AUs",
            Topic::FatArea => "FAT area",
            Topic::Capacity => "capacity",
            Topic::Classes => "classes",
            Topic::Speeds => "speeds",
        }
    }
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.label())
    }
}
