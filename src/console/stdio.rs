//! stdout and stderr that never panic. `println!` panics when stdout cannot
//! be written (`> /dev/full`, a closed pipe with SIGPIPE ignored), and a
//! panic in the middle of a writing test would skip the restore. Here a
//! failed write to stdout is remembered and turned into exit code 1 once the
//! run is over (its data restored). A failed write to stderr is remembered
//! too (there is nowhere left to say anything, but the exit code can still
//! tell): `2>/dev/full` or a closed pipe on stderr exits 1.

use std::fmt;
use std::io::{self, Write};
use std::sync::Mutex;

/// The first error writing stdout, if any.
static STDOUT_ERROR: Mutex<Option<io::ErrorKind>> = Mutex::new(None);
/// The first error writing stderr, if any.
static STDERR_ERROR: Mutex<Option<io::ErrorKind>> = Mutex::new(None);

fn remember(slot: &Mutex<Option<io::ErrorKind>>, e: &io::Error) {
    slot.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e.kind());
}

/// Write to stdout; a failure is remembered, not raised.
pub fn out(args: fmt::Arguments<'_>) {
    let mut o = io::stdout().lock();
    if let Err(e) = o.write_fmt(args) {
        remember(&STDOUT_ERROR, &e);
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

/// `-v`: say each step as it ends and what a simulated card will write.
/// Off by default, so a probe's answer fits one screen (issue 26: 22 step
/// lines above the summary scrolled it away at 80x24).
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn set_verbose(on: bool) {
    VERBOSE.store(on, std::sync::atomic::Ordering::Relaxed);
}

pub fn verbose() -> bool {
    VERBOSE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Write to stderr; a failure is remembered for the exit code.
pub fn err(args: fmt::Arguments<'_>) {
    let bar = SPINNER.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let write = || {
        let mut e = io::stderr().lock();
        if let Err(x) = e.write_fmt(args).and_then(|()| e.flush()) {
            remember(&STDERR_ERROR, &x);
        }
    };
    match bar {
        Some(b) => b.suspend(write),
        None => write(),
    }
}

/// Flush stdout and report whether everything written to stdout and
/// stderr arrived (stdout's failure first).
pub fn finish() -> Result<(), io::ErrorKind> {
    if let Err(e) = io::stdout().lock().flush() {
        remember(&STDOUT_ERROR, &e);
    }
    let first = |slot: &Mutex<Option<io::ErrorKind>>| *slot.lock().unwrap_or_else(|p| p.into_inner());
    match first(&STDOUT_ERROR).or(first(&STDERR_ERROR)) {
        Some(kind) => Err(kind),
        None => Ok(()),
    }
}

/// `println!` that cannot panic (see the module documentation).
#[macro_export]
macro_rules! outln {
    () => { $crate::console::stdio::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::console::stdio::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` that cannot panic.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::console::stdio::out(format_args!($($arg)*)) };
}

/// [`errln!`] only with `-v` (see [`verbose`]).
#[macro_export]
macro_rules! detail {
    ($($arg:tt)*) => {
        if $crate::console::stdio::verbose() {
            $crate::errln!($($arg)*)
        }
    };
}

/// `eprintln!` that cannot panic.
#[macro_export]
macro_rules! errln {
    () => { $crate::console::stdio::err(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::console::stdio::err(format_args!("{}\n", format_args!($($arg)*))) };
}
