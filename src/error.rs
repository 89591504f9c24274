//! The error a user sees: what happened, a hint, and the exit code. Modules keep
//! their own typed errors; they become a [`CliError`] at the edge, where the
//! context (which path, which argument) is known.

use std::fmt;

/// DESIGN.md exit codes.
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub exit: Exit,
    pub message: String,
    pub hint: Option<String>,
}

impl CliError {
    /// A usage error or refusal (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Usage,
            message: message.into(),
            hint: None,
        }
    }

    /// A failed run (exit 1).
    pub fn failed(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Failed,
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CliError {}

pub type CliResult<T> = Result<T, CliError>;
