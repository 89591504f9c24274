//! Ctrl-C and SIGTERM during a writing test: the handler only records the signal;
//! the test stops at the next request boundary, restores and exits 130 / 143.

use std::sync::atomic::{AtomicI32, Ordering};

static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(sig: libc::c_int) {
    PENDING.store(sig, Ordering::SeqCst);
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
/// it. Without the variable this costs one relaxed load.
pub fn crash_point(what: &str) {
    use std::sync::OnceLock;
    use std::sync::atomic::AtomicU64;
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    static STEP: AtomicU64 = AtomicU64::new(0);
    let Some(at) = *AT.get_or_init(|| std::env::var("FLASHLAB_CRASH_AT").ok().and_then(|v| v.parse().ok())) else {
        return;
    };
    let n = STEP.fetch_add(1, Ordering::SeqCst) + 1;
    if n == at {
        eprintln!("crash point {n}: {what}");
        // SAFETY: raising a signal on ourselves has no memory-safety preconditions.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
}
