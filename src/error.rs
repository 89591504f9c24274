//! The error a user sees: what happened, a hint, and the exit code. Modules keep
//! their own typed errors; they become a [`CliError`] at the edge, where the
//! context (which path, which argument) is known.

use std::fmt;

/// The exit codes of docs/DESIGN.md ("Command line").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The run failed (I/O error on a device, a test that could not complete).
    Failed = 1,
    /// Usage error or refusal; nothing was written.
    Usage = 2,
    /// Stopped by SIGINT (Ctrl-C) after restoring the data: 128 + 2.
    Interrupted = 130,
    /// Stopped by SIGTERM after restoring the data: 128 + 15.
    Terminated = 143,
}

/// An error ready to print as `error: ...` plus an optional `hint: ...` line.
#[derive(Debug, Clone)]
pub struct CliError {
    pub exit: Exit,
    pub message: String,
    pub hint: Option<String>,
    /// What the run completed before it stopped, still to be printed (an
    /// interrupted run's report).
    pub partial: Option<Box<crate::document::RunDocument>>,
}

impl CliError {
    /// A usage error or refusal (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Usage,
            message: message.into(),
            hint: None,
            partial: None,
        }
    }

    /// A failed run (exit 1).
    pub fn failed(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Failed,
            message: message.into(),
            hint: None,
            partial: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_document(mut self, doc: crate::document::RunDocument) -> Self {
        self.partial = Some(Box::new(doc));
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // On a terminal, wrapped to its width, each line of the message on
        // its own, never inside a word or a `quoted command`; in
        // a pipe or a log, one line each, whole for grep.
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            write!(f, "error: {}", self.message)?;
            if let Some(hint) = &self.hint {
                write!(f, "\nhint: {hint}")?;
            }
            return Ok(());
        }
        let lines = |text: &str, head: &str| {
            text.lines()
                .enumerate()
                .map(|(i, l)| {
                    let indent: String = l.chars().take_while(|c| c.is_whitespace()).collect();
                    let first = if i == 0 { head.to_string() } else { indent.clone() };
                    crate::console::wrap(l, &first, &format!("{indent}  "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        write!(f, "{}", lines(&self.message, "error: "))?;
        if let Some(hint) = &self.hint {
            write!(f, "\n{}", lines(hint, "hint: "))?;
        }
        Ok(())
    }
}

impl std::error::Error for CliError {}

pub type CliResult<T> = Result<T, CliError>;

// Module errors become user errors here, one mapping per error kind: the exit
// code follows the kind (refusals and bad options 2, device and journal
// failures 1), never the message text.

use crate::measure::MeasureError;
use crate::safety::SafetyError;
use crate::targets::TargetError;

/// Exit 130 for Ctrl-C, 143 for SIGTERM, once the data is back.
pub fn interrupted(signal: i32) -> CliError {
    let exit = if signal == libc::SIGTERM {
        Exit::Terminated
    } else {
        Exit::Interrupted
    };
    let name = crate::safety::signals::name(signal);
    CliError {
        exit,
        message: format!("interrupted by {name}"),
        // An error line with no hint. What is left to do.
        hint: Some(
            "the run stopped where you asked; whatever it wrote is back as it was (see above). Run the command again \
             for a whole result"
                .into(),
        ),
        partial: None,
    }
}

impl From<TargetError> for CliError {
    fn from(e: TargetError) -> Self {
        let msg = e.to_string();
        match e {
            TargetError::NotFound { .. } => CliError::usage(msg).hint("check the path; `lsblk` lists block devices"),
            TargetError::PermissionDenied { .. } => CliError::usage(msg)
                .hint("run as root (sudo flashlab ...) or join the group that owns the device (often 'disk')"),
            TargetError::NotBlockOrFile { .. } => {
                CliError::usage(msg).hint("flashlab measures block devices (/dev/mmcblk0, /dev/sdX) and regular files")
            }
            TargetError::Empty { .. } => {
                CliError::usage(msg).hint("is a card in the reader? an empty reader shows size 0")
            }
            TargetError::TooSmall { .. } => {
                CliError::usage(msg).hint("flashlab measures whole blocks; give a larger file or device")
            }
            TargetError::Busy { .. } => CliError::usage(format!("{msg}; nothing was written"))
                .hint("unmount it (and its partitions) and stop what holds it; `flashlab info` shows what uses it"),
            TargetError::Unaligned { .. } | TargetError::PastEnd { .. } => CliError::usage(msg)
                .hint("offsets and lengths must be multiples of the logical block size and inside the target"),
            TargetError::WriteProtected { .. } => CliError::usage(format!("{msg}; nothing was written")).hint(
                "check the card's lock switch, or make the device writable (losetup without -r, blockdev --setrw)",
            ),
            TargetError::Io { .. } | TargetError::Open { .. } => CliError::failed(msg)
                .hint("the device reported an error; `dmesg` may say more (a failing card, a loose reader)"),
            TargetError::Journal(_) => CliError::failed(msg)
                .hint("the write it was to protect was not made; check the journal directory's disk"),
            TargetError::Aliased { .. } => CliError::failed(format!("{msg}; nothing more was written")).hint(
                "what was written is put back; `flashlab capacity TARGET --write` finds the real size, and probe's \
                 steps after it stay inside it",
            ),
            TargetError::Interrupted { signal } => interrupted(signal),
            TargetError::Undeclared { .. }
            | TargetError::BufferTooSmall { .. }
            | TargetError::ReadOnly
            | TargetError::ZeroQueueDepth => CliError::failed(format!("internal: {msg}"))
                .hint("this is a flashlab bug; please report it with the command line"),
        }
    }
}

impl From<SafetyError> for CliError {
    fn from(e: SafetyError) -> Self {
        let msg = e.to_string();
        match e {
            SafetyError::Target(t) => t.into(),
            SafetyError::VerifyFailed { .. } => CliError::failed(msg)
                .hint("the journal is kept: run `flashlab restore` (with --engine psync to rule out the engine)"),
            SafetyError::NotAJournal { .. } => CliError::usage(msg)
                .hint("nothing was written; `flashlab restore` lists the journals in the journal directory"),
            SafetyError::NotYours { .. } => CliError::usage(format!("{msg}; nothing was restored"))
                .hint("restore it as the user who made it, or as root (its run wrote those bytes)"),
            SafetyError::Corrupt { path, .. } => CliError::usage(format!("{msg}; nothing was restored")).hint(format!(
                "the journal cannot be trusted; nothing was written to the target and the journal is kept. Once you \
                 have looked at it, `flashlab restore --set-aside {}` sets it aside",
                crate::console::shell_word(&path)
            )),
            SafetyError::IdentityMismatch { .. } => CliError::usage(msg)
                .hint("nothing was written; if you are sure this is the same device, add --force"),
            SafetyError::JournalDir { .. } => {
                CliError::usage(msg).hint("choose another place with --journal-dir DIR (on a different device)")
            }
            SafetyError::Registry { .. } => CliError::usage(format!("{msg}; nothing was written")).hint(format!(
                "every run records its journal there, so that a run under another user or journal directory finds \
                 it pending; make it writable for everyone (`sudo mkdir -p -m 1777 {}`)",
                crate::safety::registry::SYSTEM
            )),
            SafetyError::InUse { .. } => CliError::usage(msg).hint(
                "unmount it (and every partition and loop device over the same bytes), or wait for the other run to end",
            ),
            SafetyError::Live { .. } => CliError::usage(msg).hint(
                "that run restores its data itself when it ends; `flashlab restore` is for journals left by a crash",
            ),
            SafetyError::Journal { .. } => {
                CliError::failed(msg).hint("check the journal directory's disk (space, permissions)")
            }
            SafetyError::BadRange { .. } | SafetyError::PastEnd { .. } => CliError::usage(msg)
                .hint("ranges are OFFSET+LENGTH, aligned to the logical block, inside the target"),
        }
    }
}

impl From<crate::safety::output::OutputError> for CliError {
    fn from(e: crate::safety::output::OutputError) -> Self {
        use crate::safety::output::OutputError;
        let msg = e.to_string();
        match e {
            OutputError::NotAFile { .. } => CliError::usage(msg).hint("give a new file name, as in -o report.html"),
            OutputError::InUse { .. } => CliError::usage(msg).hint(
                "write it elsewhere (another name, as in -o report.html), or free this file first (losetup -d, \
                 umount, swapoff, or end the program writing it)",
            ),
            OutputError::Io { .. } => {
                CliError::usage(msg).hint("check the directory exists and is writable, and give a regular file's name")
            }
        }
    }
}

impl From<MeasureError> for CliError {
    fn from(e: MeasureError) -> Self {
        match e {
            MeasureError::Target(t) => t.into(),
            MeasureError::Safety(s) => s.into(),
            MeasureError::DoesNotFit { ref fix, .. } => {
                let fix = fix.clone();
                CliError::usage(e.to_string()).hint(fix)
            }
            MeasureError::Bad { why, fix } => CliError::usage(why).hint(fix),
            MeasureError::Internal(m) => CliError::failed(format!("internal: {m}"))
                .hint("this is a flashlab bug; please report it with the command line"),
        }
    }
}
