//! Ctrl-C and SIGTERM during a writing test: the handler only records the signal;
//! the test stops at the next request boundary, restores and exits 130 / 143.

use std::sync::atomic::{AtomicI32, Ordering};

static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(sig: libc::c_int) {
    PENDING.store(sig, Ordering::SeqCst);
}

/// The name a report gives the signal that stopped a run.
pub fn name(sig: i32) -> &'static str {
    if sig == libc::SIGTERM { "SIGTERM" } else { "SIGINT" }
}

/// Catch SIGINT and SIGTERM from now on.
pub fn install() {
    catch(&[libc::SIGINT, libc::SIGTERM], record);
}

/// Send `signals` to `handler` from now on. Every handler given here only
/// stores to an atomic.
fn catch(signals: &[libc::c_int], handler: extern "C" fn(libc::c_int)) {
    // SAFETY: the handlers only store to an atomic, which is
    // async-signal-safe; the sigaction struct is fully initialised before
    // use.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        for &sig in signals {
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The last of SIGUSR1 and SIGUSR2 received and not yet taken.
static MEDIUM: AtomicI32 = AtomicI32::new(0);

extern "C" fn record_medium(sig: libc::c_int) {
    MEDIUM.store(sig, Ordering::SeqCst);
}

/// Catch SIGUSR1 and SIGUSR2 from now on (emulate: a card pulled out of
/// its reader and put back), for [`take_medium`].
pub fn install_medium() {
    catch(&[libc::SIGUSR1, libc::SIGUSR2], record_medium);
}

/// SIGUSR1 or SIGUSR2, whichever came last since the last call, if any.
pub fn take_medium() -> Option<i32> {
    match MEDIUM.swap(0, Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The signal received since [`install`], if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Forget the signal received (emulate asks for a second one while its
/// device is still in use).
pub fn clear() {
    PENDING.store(0, Ordering::SeqCst);
}

/// What stops one run: a signal to the process (every run stops), or this
/// run's own stop, which leaves the process's other runs going (a batch of
/// devices that ends one device's run). A run stops as on Ctrl-C: at the
/// next request boundary, its data restored. Clones stop together.
#[derive(Debug, Clone, Default)]
pub struct Stop(std::sync::Arc<AtomicI32>);

impl Stop {
    /// The signal that stops this run, if any: the process's first.
    pub fn pending(&self) -> Option<i32> {
        pending().or(match self.0.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        })
    }

    /// Stop this run alone, as `signal` would (SIGINT or SIGTERM, for the
    /// exit code and the report).
    pub fn stop(&self, signal: i32) {
        self.0.store(signal, Ordering::SeqCst);
    }
}

thread_local! {
    /// See [`crash_in_process_at`].
    static IN_PROCESS: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// What an in-process crash unwinds with: the name of the step it stopped at.
#[derive(Debug, Clone)]
pub struct Crash(pub String);

/// For tests: the `n`-th crash point this thread passes unwinds with
/// [`Crash`] (None: none does). What a SIGKILL at that step leaves behind
/// (the journal and the target as they are, the run's restore never
/// reached), without a process to kill: the crash matrix runs in plain
/// `cargo test`, on a regular file, without root.
#[doc(hidden)]
pub fn crash_in_process_at(n: Option<u64>) {
    IN_PROCESS.with(|c| c.set(n));
}

/// When a test hook fires: at the N-th crash point of the run, or at the
/// k-th time the run passes the point named NAME (`restore batch#1`).
#[cfg(feature = "crash-hooks")]
#[derive(Debug, Clone, PartialEq, Eq)]
enum At {
    Step(u64),
    Named(String, u64),
}

#[cfg(feature = "crash-hooks")]
impl At {
    fn parse(text: &str) -> Option<At> {
        match text.rsplit_once('#') {
            Some((name, k)) => Some(At::Named(name.to_string(), k.parse().ok()?)),
            None => text.parse().ok().map(At::Step),
        }
    }

    fn fires(&self, step: u64, what: &str, seen_here: u64) -> bool {
        match self {
            At::Step(n) => *n == step,
            At::Named(name, k) => name == what && *k == seen_here,
        }
    }
}

/// A test hook for crash-safety tests: with `FLASHLAB_CRASH_AT=N` in the
/// environment, the process kills itself with SIGKILL at the N-th step (journal
/// record, journal sync, device write, restore write), as a power cut would stop
/// it; with `FLASHLAB_SIGINT_AT=N` or `FLASHLAB_SIGTERM_AT=N` it sends itself
/// that signal there instead, as a user pressing Ctrl-C (or a service manager
/// stopping it) at that moment would. `N` may also be `NAME#k`: the k-th time
/// the run passes the step named NAME (`restore batch#1`). Without the
/// variables this costs one load. The variables are read only in a build
/// with the `crash-hooks` feature (the test suite's: README, `.ci/run`): a
/// user's environment can never make an installed flashlab kill itself.
pub fn crash_point(what: &str) {
    if let Some(k) = IN_PROCESS.with(std::cell::Cell::get) {
        if k <= 1 {
            IN_PROCESS.with(|c| c.set(None));
            std::panic::panic_any(Crash(what.to_string()));
        }
        IN_PROCESS.with(|c| c.set(Some(k - 1)));
    }
    #[cfg(feature = "crash-hooks")]
    signal_hooks(what);
}

/// The environment's crash and interrupt hooks (see [`crash_point`]).
#[cfg(feature = "crash-hooks")]
fn signal_hooks(what: &str) {
    use std::sync::atomic::AtomicU64;
    use std::sync::{Mutex, OnceLock};
    type Hooks = [(Option<At>, i32); 3];
    static AT: OnceLock<Hooks> = OnceLock::new();
    static STEP: AtomicU64 = AtomicU64::new(0);
    static SEEN: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());
    let hook = |var: &str| std::env::var(var).ok().and_then(|v| At::parse(&v));
    let hooks = AT.get_or_init(|| {
        [
            (hook("FLASHLAB_CRASH_AT"), libc::SIGKILL),
            (hook("FLASHLAB_SIGINT_AT"), libc::SIGINT),
            (hook("FLASHLAB_SIGTERM_AT"), libc::SIGTERM),
        ]
    });
    if hooks.iter().all(|(at, _)| at.is_none()) {
        return;
    }
    let n = STEP.fetch_add(1, Ordering::SeqCst) + 1;
    let here = {
        let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
        match seen.iter_mut().find(|(w, _)| w == what) {
            Some((_, k)) => {
                *k += 1;
                *k
            }
            None => {
                seen.push((what.to_string(), 1));
                1
            }
        }
    };
    for (at, sig) in hooks {
        if at.as_ref().is_some_and(|a| a.fires(n, what, here)) {
            let kind = if *sig == libc::SIGKILL { "crash" } else { "interrupt" };
            crate::errln!("{kind} point {n}: {what}");
            // SAFETY: raising a signal on ourselves has no memory-safety
            // preconditions; the installed handler only stores to an atomic.
            unsafe {
                libc::raise(*sig);
            }
        }
    }
}
