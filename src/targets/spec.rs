//! TARGET as typed on the command line, parsed without touching the system
//! (ripgrep's habit: validate first, resolve later).

use std::path::PathBuf;

/// The default when no TARGET is given (docs/DESIGN.md): the built-in simulated card.
pub const DEFAULT_TARGET: &str = "sim:demo";

/// A parsed TARGET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// A block device or regular file.
    Path(PathBuf),
    /// `sim:PROFILE` or `sim:FILE.toml`, with `,key=value` overrides.
    Sim {
        base: String,
        overrides: Vec<(String, String)>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("empty target")]
    Empty,
    #[error("'sim:' needs a profile name or a .toml file (e.g. sim:demo)")]
    EmptySim,
    #[error("override '{0}' is not key=value")]
    BadOverride(String),
}

impl TargetSpec {
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        if text.is_empty() {
            return Err(SpecError::Empty);
        }
        let Some(rest) = text.strip_prefix("sim:") else {
            return Ok(TargetSpec::Path(PathBuf::from(text)));
        };
        let mut parts = rest.split(',');
        let base = parts.next().unwrap_or_default().trim().to_string();
        if base.is_empty() {
            return Err(SpecError::EmptySim);
        }
        let overrides = parts
            .map(|p| match p.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                    Ok((k.trim().to_string(), v.trim().to_string()))
                }
                _ => Err(SpecError::BadOverride(p.to_string())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TargetSpec::Sim { base, overrides })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_and_sims() {
        assert_eq!(
            TargetSpec::parse("/dev/mmcblk0"),
            Ok(TargetSpec::Path("/dev/mmcblk0".into()))
        );
        assert_eq!(
            TargetSpec::parse("sim:demo"),
            Ok(TargetSpec::Sim {
                base: "demo".into(),
                overrides: vec![]
            })
        );
        assert_eq!(
            TargetSpec::parse("sim:card.toml,au_size=8M, seed=3"),
            Ok(TargetSpec::Sim {
                base: "card.toml".into(),
                overrides: vec![("au_size".into(), "8M".into()), ("seed".into(), "3".into())]
            })
        );
        assert_eq!(TargetSpec::parse(""), Err(SpecError::Empty));
        assert_eq!(TargetSpec::parse("sim:"), Err(SpecError::EmptySim));
        assert_eq!(
            TargetSpec::parse("sim:demo,au_size"),
            Err(SpecError::BadOverride("au_size".into()))
        );
        assert_eq!(
            TargetSpec::parse("sim:demo,=3"),
            Err(SpecError::BadOverride("=3".into()))
        );
    }
}
