//! The byte ranges a writing test declares before it writes anything: parsed,
//! checked against the target (aligned, inside, no wrap-around), merged.

use serde::{Deserialize, Serialize};

use super::SafetyError;
use crate::units::parse_size;

/// `len` bytes at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Range {
    pub offset: u64,
    pub len: u64,
}

impl Range {
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }

    pub fn contains(&self, offset: u64, len: u64) -> bool {
        offset >= self.offset && offset.checked_add(len).is_some_and(|e| e <= self.end())
    }

    /// Whether any byte of `len` at `offset` is in the range.
    pub fn touches(&self, offset: u64, len: u64) -> bool {
        self.offset < offset.saturating_add(len) && offset < self.end()
    }
}

/// Parse `OFFSET+LENGTH` (sizes as everywhere: `4M`, `1GiB`, `0x1000`).
pub fn parse(text: &str) -> Result<Range, SafetyError> {
    let bad = |why: String| SafetyError::BadRange {
        range: text.to_string(),
        why,
    };
    let (o, l) = text
        .split_once('+')
        .ok_or_else(|| bad("expected OFFSET+LENGTH, e.g. 16M+4M".into()))?;
    let offset = parse_size(o).map_err(|e| bad(e.to_string()))?;
    let len = parse_size(l).map_err(|e| bad(e.to_string()))?;
    Ok(Range { offset, len })
}

/// Sort and merge overlapping ranges; refuse empty ones, unaligned ones and
/// any that end past the target (offsets never wrap). Ranges that only touch
/// stay apart: a range is journalled whole at its first write, so a test
/// that declares its area in pieces (bench) journals, restores and verifies
/// only the pieces it wrote.
pub fn normalize(mut ranges: Vec<Range>, size: u64, block: u64) -> Result<Vec<Range>, SafetyError> {
    for r in &ranges {
        let text = format!("{}+{}", r.offset, r.len);
        if r.len == 0 {
            return Err(SafetyError::BadRange {
                range: text,
                why: "empty".into(),
            });
        }
        if !r.offset.is_multiple_of(block) || !r.len.is_multiple_of(block) {
            return Err(SafetyError::BadRange {
                range: text,
                why: format!("not aligned to the {block}-byte block"),
            });
        }
        if r.offset.checked_add(r.len).is_none_or(|e| e > size) {
            return Err(SafetyError::PastEnd { range: text, size });
        }
    }
    ranges.sort();
    let mut out: Vec<Range> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.offset < last.end() => last.len = last.len.max(r.end() - last.offset),
            _ => out.push(r),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_merges_and_refuses() {
        let r = |o, l| Range { offset: o, len: l };
        assert_eq!(parse("16M+4M").unwrap(), r(16 << 20, 4 << 20));
        assert!(parse("16M").is_err() && parse("x+1").is_err());
        let n = normalize(
            vec![r(8192, 4096), r(0, 8192), r(4096, 4096), r(65536, 512)],
            1 << 20,
            512,
        )
        .unwrap();
        assert_eq!(n, vec![r(0, 8192), r(8192, 4096), r(65536, 512)]);
        assert!(matches!(
            normalize(vec![r(1 << 20, 512)], 1 << 20, 512),
            Err(SafetyError::PastEnd { .. })
        ));
        assert!(
            normalize(vec![r(u64::MAX - 511, 512)], u64::MAX, 512).is_err(),
            "no wrap"
        );
        assert!(normalize(vec![r(100, 512)], 1 << 20, 512).is_err());
        assert!(normalize(vec![r(0, 0)], 1 << 20, 512).is_err());
    }
}
