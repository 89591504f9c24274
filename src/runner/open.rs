//! From a parsed TARGET to an opened [`Target`]: once read-only for the
//! run, once exclusively for its writing tests.

use crate::args;
use crate::error::CliError;
use crate::sim::SimTarget;
use crate::targets::real::{EngineChoice, OpenOptions, RealTarget};
use crate::targets::{Target, TargetError};

/// The opened target, kept concrete where a command needs to know its kind.
pub enum Opened {
    Real(Box<RealTarget>),
    Sim(Box<SimTarget>),
}

impl Opened {
    pub fn into_target(self) -> Box<dyn Target> {
        match self {
            Opened::Real(t) => t,
            Opened::Sim(t) => t,
        }
    }

    pub fn as_target(&self) -> &dyn Target {
        match self {
            Opened::Real(t) => t.as_ref(),
            Opened::Sim(t) => t.as_ref(),
        }
    }

    pub fn as_target_mut(&mut self) -> &mut dyn Target {
        match self {
            Opened::Real(t) => t.as_mut(),
            Opened::Sim(t) => t.as_mut(),
        }
    }
}

pub fn open(target: &args::TargetArg, opts: OpenOptions) -> Result<Opened, CliError> {
    let text = &target.text;
    // An emulated card whose emulation is stopped: any read would hang,
    // beyond the reach of Ctrl-C, until it runs again.
    if let args::Resolved::Path(path) = &target.resolved
        && let Some(s) = crate::emulate::stale::stopped_serving(path)
    {
        return Err(CliError::usage(format!("{text}: {}", s.why())).hint(s.fix()));
    }
    match &target.resolved {
        args::Resolved::Path(path) => match RealTarget::open(path, text, opts) {
            Ok(t) => Ok(Opened::Real(Box::new(t))),
            // `probe kingston-sa04g`: a profile's name, not a path.
            Err(e @ TargetError::NotFound { .. })
                if crate::sim::profiles::profile(text.split(',').next().unwrap_or(text)).is_some() =>
            {
                Err(CliError::usage(e.to_string()).hint(format!("did you mean sim:{text}? (a simulated card)")))
            }
            Err(TargetError::Busy { .. }) if opts.exclusive => Err(CliError::usage(format!(
                "{text} is in use{}; nothing was written",
                users(path)
            ))
            .hint("unmount it and its partitions (and stop what holds it) first")),
            Err(e) => Err(e.into()),
        },
        args::Resolved::Sim(params) => Ok(Opened::Sim(Box::new(SimTarget::new(text, (**params).clone())))),
    }
}

/// What uses a busy block device, for the refusal message.
fn users(path: &std::path::Path) -> String {
    let u = crate::safety::claim::users_of(path);
    if u.is_empty() {
        String::new()
    } else {
        format!(" ({})", u.join(", "))
    }
}

/// Open read-only, as every read-only test does.
pub fn read_only(target: &args::TargetArg, engine: EngineChoice) -> Result<Opened, CliError> {
    open(
        target,
        OpenOptions {
            write: false,
            exclusive: false,
            engine,
        },
    )
}
