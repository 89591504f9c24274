//! From a parsed TARGET to an opened [`Target`], with the refusals of DESIGN.md
//! turned into messages a user can act on.

use crate::error::CliError;
use crate::seam::TargetError;
use crate::seam::real::{OpenOptions, RealTarget};
use crate::seam::spec::TargetSpec;
use crate::sim::{SimTarget, params_from_spec};

/// The opened target, kept concrete where a command needs to know its kind.
pub enum Opened {
    Real(Box<RealTarget>),
    Sim(Box<SimTarget>),
}

pub fn parse(text: &str) -> Result<TargetSpec, CliError> {
    TargetSpec::parse(text).map_err(|e| {
        CliError::usage(format!("bad target '{text}': {e}"))
            .hint("a TARGET is a block device (/dev/mmcblk0), a regular file, or sim:PROFILE[,key=value...]")
    })
}

pub fn open(text: &str, opts: OpenOptions) -> Result<Opened, CliError> {
    match parse(text)? {
        TargetSpec::Path(path) => RealTarget::open(&path, text, opts)
            .map(|t| Opened::Real(Box::new(t)))
            .map_err(target_error),
        TargetSpec::Sim { base, overrides } => params_from_spec(&base, &overrides)
            .map(|p| Opened::Sim(Box::new(SimTarget::new(text, p))))
            .map_err(|e| {
                CliError::usage(format!("bad simulated card '{text}': {e}"))
                    .hint("`flashlab sim list` names the profiles; `flashlab sim show PROFILE --toml` lists every key")
            }),
    }
}

/// A [`TargetError`] as the user should see it.
pub fn target_error(e: TargetError) -> CliError {
    let msg = e.to_string();
    match e {
        TargetError::NotFound { .. } => CliError::usage(msg).hint("check the path; `lsblk` lists block devices"),
        TargetError::PermissionDenied { .. } => CliError::usage(msg)
            .hint("run as root (sudo flashlab ...) or join the group that owns the device (often 'disk')"),
        TargetError::NotBlockOrFile { .. } => {
            CliError::usage(msg).hint("flashlab measures block devices (/dev/mmcblk0, /dev/sdX) and regular files")
        }
        TargetError::Empty { .. } => CliError::usage(msg).hint("is a card in the reader? an empty reader shows size 0"),
        TargetError::Busy { .. } => {
            CliError::usage(msg).hint("unmount it (and its partitions) first; `flashlab info` shows what uses it")
        }
        TargetError::Unaligned { .. } | TargetError::PastEnd { .. } => CliError::usage(msg)
            .hint("offsets and lengths must be multiples of the logical block size and inside the target"),
        TargetError::WriteProtected { .. } => CliError::usage(format!("{msg}; nothing was written"))
            .hint("check the card's lock switch, or make the device writable (losetup without -r, blockdev --setrw)"),
        TargetError::Io { .. } | TargetError::Open { .. } => CliError::failed(msg)
            .hint("the device reported an error; `dmesg` may say more (a failing card, a loose reader)"),
        TargetError::Journal(_) => {
            CliError::failed(msg).hint("the write it was to protect was not made; check the journal directory's disk")
        }
        TargetError::Interrupted { signal } => super::write::interrupted_error(signal),
        TargetError::Undeclared { .. }
        | TargetError::BufferTooSmall { .. }
        | TargetError::ReadOnly
        | TargetError::ZeroQueueDepth => CliError::failed(format!("internal: {msg}"))
            .hint("this is a flashlab bug; please report it with the command line"),
    }
}
