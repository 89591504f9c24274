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
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe;
    // the sigaction struct is fully initialised before use.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = record as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        for sig in [libc::SIGINT, libc::SIGTERM] {
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The signal received since [`install`], if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// A test hook for crash-safety tests: with `FLASHLAB_CRASH_AT=N` in the
/// environment, the process kills itself with SIGKILL at the N-th step (journal
/// record, journal sync, device write, restore write), as a power cut would stop
/// it; with `FLASHLAB_SIGINT_AT=N` it sends itself SIGINT there instead, as a
/// user pressing Ctrl-C at that moment would. Without the variables this costs
/// one relaxed load.
pub fn crash_point(what: &str) {
    use std::sync::OnceLock;
    use std::sync::atomic::AtomicU64;
    static AT: OnceLock<(Option<u64>, Option<u64>)> = OnceLock::new();
    static STEP: AtomicU64 = AtomicU64::new(0);
    let step = |var: &str| std::env::var(var).ok().and_then(|v| v.parse().ok());
    let (kill, int) = *AT.get_or_init(|| (step("FLASHLAB_CRASH_AT"), step("FLASHLAB_SIGINT_AT")));
    if kill.is_none() && int.is_none() {
        return;
    }
    let n = STEP.fetch_add(1, Ordering::SeqCst) + 1;
    if kill == Some(n) {
        crate::errln!("crash point {n}: {what}");
        // SAFETY: raising a signal on ourselves has no memory-safety preconditions.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
    if int == Some(n) {
        crate::errln!("interrupt point {n}: {what}");
        // SAFETY: as above; the installed handler only stores to an atomic.
        unsafe {
            libc::raise(libc::SIGINT);
        }
    }
}
