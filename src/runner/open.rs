//! From a TARGET as the user typed it to an opened [`Target`].

use crate::error::CliError;
use crate::sim::{SimTarget, params_from_spec};
use crate::target::real::{OpenOptions, RealTarget};
use crate::target::spec::TargetSpec;

/// The opened target, kept concrete where a command needs to know its kind.
pub enum Opened {
    Real(Box<RealTarget>),
    Sim(Box<SimTarget>),
}

impl Opened {
    pub fn into_target(self) -> Box<dyn crate::target::Target> {
        match self {
            Opened::Real(t) => t,
            Opened::Sim(t) => t,
        }
    }

    pub fn as_target(&self) -> &dyn crate::target::Target {
        match self {
            Opened::Real(t) => t.as_ref(),
            Opened::Sim(t) => t.as_ref(),
        }
    }
}

pub fn parse(text: &str) -> Result<TargetSpec, CliError> {
    TargetSpec::parse(text).map_err(|e| {
        CliError::usage(format!("bad target '{text}': {e}"))
            .hint("a TARGET is a block device (/dev/mmcblk0), a regular file, or sim:PROFILE[,key=value...]")
    })
}

pub fn open(text: &str, opts: OpenOptions) -> Result<Opened, CliError> {
    match parse(text)? {
        TargetSpec::Path(path) => match RealTarget::open(&path, text, opts) {
            Ok(t) => Ok(Opened::Real(Box::new(t))),
            // `probe kingston-sa04g`: a profile's name, not a path.
            Err(e @ crate::target::TargetError::NotFound { .. })
                if crate::sim::profiles::profile(text.split(',').next().unwrap_or(text)).is_some() =>
            {
                Err(CliError::usage(e.to_string()).hint(format!("did you mean sim:{text}? (a simulated card)")))
            }
            Err(e) => Err(e.into()),
        },
        TargetSpec::Sim { base, overrides } => params_from_spec(&base, &overrides)
            .map(|p| Opened::Sim(Box::new(SimTarget::new(text, p))))
            .map_err(|e| {
                CliError::usage(format!("bad simulated card '{text}': {e}"))
                    .hint("`flashlab sim list` names the profiles; `flashlab sim show PROFILE --toml` lists every key")
            }),
    }
}

/// Open read-only, as every read-only test and every plan does.
pub fn read_only(text: &str, engine: crate::target::real::EngineChoice) -> Result<Opened, CliError> {
    open(
        text,
        OpenOptions {
            write: false,
            exclusive: false,
            engine,
        },
    )
}
