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

/// What shows progress on stderr's terminal: one run's bar, or the lines
/// of several runs at once (`batch`), which stderr lines go around alike.
#[derive(Clone)]
pub enum Shown {
    Bar(indicatif::ProgressBar),
    Many(indicatif::MultiProgress),
}

impl Shown {
    fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match self {
            Shown::Bar(b) => b.suspend(f),
            Shown::Many(m) => m.suspend(f),
        }
    }
}

/// The progress display on stderr, if one is showing: stderr lines are
/// written with it hidden, so they never leave half a spinner behind. One
/// for the process, as the terminal is.
static SPINNER: Mutex<Option<Shown>> = Mutex::new(None);

/// Show (Some) or forget (None) the display stderr lines must go around.
/// While one shows, the terminal does not echo control characters: a
/// Ctrl-C's "^C" after a bar as wide as the terminal wrapped it onto a new
/// line, and the bar's own clear then left the old line standing above the
/// report.
pub fn set_spinner(shown: Option<Shown>) {
    quiet_control_echo(shown.is_some());
    *SPINNER.lock().unwrap_or_else(|p| p.into_inner()) = shown;
}

/// The terminal's settings before [`quiet_control_echo`] changed them.
static SAVED_TERMIOS: Mutex<Option<rustix::termios::Termios>> = Mutex::new(None);

/// Turn the echo of control characters (ECHOCTL) off on stderr's terminal,
/// or put back what it was. Only from the terminal's foreground process
/// group: changing a terminal from the background stops the process
/// (SIGTTOU). Any failure leaves the terminal as it was: the echo is
/// cosmetic.
fn quiet_control_echo(quiet: bool) {
    use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcgetpgrp, tcsetattr};
    let mut saved = SAVED_TERMIOS.lock().unwrap_or_else(|p| p.into_inner());
    let fd = io::stderr();
    if !quiet {
        if let Some(t) = saved.take() {
            let _ = tcsetattr(&fd, OptionalActions::Now, &t);
        }
        return;
    }
    if saved.is_some() || tcgetpgrp(&fd).ok() != Some(rustix::process::getpgrp()) {
        return;
    }
    if let Ok(t) = tcgetattr(&fd)
        && t.local_modes.contains(LocalModes::ECHOCTL)
    {
        let mut quiet = t.clone();
        quiet.local_modes.remove(LocalModes::ECHOCTL);
        if tcsetattr(&fd, OptionalActions::Now, &quiet).is_ok() {
            *saved = Some(t);
        }
    }
}

/// `-v`: say each step as it ends and what a simulated card will write.
/// Off by default, so a probe's answer fits one screen (22 step
/// lines above the summary scrolled it away at 80x24).
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn set_verbose(on: bool) {
    VERBOSE.store(on, std::sync::atomic::Ordering::Relaxed);
}

pub fn verbose() -> bool {
    VERBOSE.load(std::sync::atomic::Ordering::Relaxed)
}

std::thread_local! {
    /// What this thread's stderr lines start with: a batch names the
    /// device each line is about ("sdc: capacity: ..."), as several run at
    /// once.
    static PREFIX: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Start every stderr line this thread writes with `prefix` (None: as
/// they are).
pub fn set_thread_prefix(prefix: Option<String>) {
    PREFIX.with(|p| *p.borrow_mut() = prefix);
}

/// This thread's lines share the screen with other runs' (a prefix is
/// set): say each event in one line, leave lists to `--json` and the
/// stored run (eight devices' range lists filled the screen).
pub fn brief() -> bool {
    PREFIX.with(|p| p.borrow().is_some())
}

/// Write to stderr; a failure is remembered for the exit code. On a
/// terminal a line wider than it is wrapped between words, under its own
/// indent and two more columns ("the original data i|s back");
/// in a pipe every line stays whole, for scripts that grep it.
pub fn err(args: fmt::Arguments<'_>) {
    use std::io::IsTerminal;
    let bar = SPINNER.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let prefixed = PREFIX.with(|p| {
        p.borrow().as_ref().map(|pre| {
            let t = args.to_string();
            let body = t.strip_suffix('\n').unwrap_or(&t);
            let mut lines: String = body.lines().map(|l| format!("{pre}: {l}\n")).collect();
            if !t.ends_with('\n') {
                lines.pop();
            }
            lines
        })
    });
    let text = match (io::stderr().is_terminal(), prefixed) {
        (true, Some(t)) => Some(super::wrap_long_lines(&t)),
        (true, None) => Some(super::wrap_long_lines(&args.to_string())),
        (false, t) => t,
    };
    let write = || {
        let mut e = io::stderr().lock();
        let done = match &text {
            Some(t) => e.write_all(t.as_bytes()),
            None => e.write_fmt(args),
        };
        if let Err(x) = done.and_then(|()| e.flush()) {
            remember(&STDERR_ERROR, &x);
        }
    };
    match bar {
        Some(shown) => shown.suspend(write),
        None => write(),
    }
}

/// Flush stdout and report whether everything written to stdout and
/// stderr arrived (stdout's failure first).
pub fn finish() -> Result<(), io::ErrorKind> {
    quiet_control_echo(false);
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
