//! stdout and stderr that never panic. `println!` panics when stdout cannot
//! be written (`> /dev/full`, a closed pipe with SIGPIPE ignored), and a
//! panic in the middle of a writing test would skip the restore. Here a
//! failed write to stdout is remembered and turned into exit code 1 once the
//! run is over (its data restored); stderr failures are dropped, since there
//! is nowhere left to say anything.

use std::fmt;
use std::io::{self, Write};
use std::sync::Mutex;

/// The first error writing stdout, if any.
static STDOUT_ERROR: Mutex<Option<io::ErrorKind>> = Mutex::new(None);

/// Write to stdout; a failure is remembered, not raised.
pub fn out(args: fmt::Arguments<'_>) {
    let mut o = io::stdout().lock();
    if let Err(e) = o.write_fmt(args) {
        let mut first = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(e.kind());
    }
}

/// The progress spinner on stderr, if one is showing: stderr lines are
/// written with it hidden, so they never leave half a spinner behind.
static SPINNER: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);

/// Show (Some) or forget (None) the spinner stderr lines must go around.
pub fn set_spinner(bar: Option<indicatif::ProgressBar>) {
    *SPINNER.lock().unwrap_or_else(|p| p.into_inner()) = bar;
}

/// The spinner showing now, if any (the progress helper turns it into a
/// bar once a step says how far it is).
pub fn spinner() -> Option<indicatif::ProgressBar> {
    SPINNER.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Write to stderr; a failure is ignored.
pub fn err(args: fmt::Arguments<'_>) {
    let bar = SPINNER.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match bar {
        Some(b) => b.suspend(|| {
            let _ = io::stderr().lock().write_fmt(args);
        }),
        None => {
            let _ = io::stderr().lock().write_fmt(args);
        }
    }
}

/// Flush stdout and report whether everything written to it arrived.
pub fn finish() -> Result<(), io::ErrorKind> {
    if let Err(e) = io::stdout().lock().flush() {
        let mut first = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(e.kind());
    }
    match *STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner()) {
        Some(kind) => Err(kind),
        None => Ok(()),
    }
}

/// `println!` that cannot panic (see the module documentation).
#[macro_export]
macro_rules! outln {
    () => { $crate::render::stdio::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::render::stdio::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` that cannot panic.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::render::stdio::out(format_args!($($arg)*)) };
}

/// `eprintln!` that cannot panic.
#[macro_export]
macro_rules! errln {
    () => { $crate::render::stdio::err(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::render::stdio::err(format_args!("{}\n", format_args!($($arg)*))) };
}
