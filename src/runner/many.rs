//! Several runs at once (`batch`): who may use a bus when, and what ran
//! beside what. Figures taken while another device on the same bus moves
//! data measure the bus, not the card (ten cards flashed at once on one
//! hub, 9 reported failed, all fine: balenaEtcher issue #3589;
//! docs/SOURCES.md), so a step that measures speed holds its bus alone,
//! and steps that only check data share it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

/// How a step uses its device's bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Data checks (capacity): any number at once on one bus.
    Shared,
    /// Speed and timing (bench, probe): nothing else on the bus meanwhile.
    Alone,
}

/// A step's hold on its bus, released when dropped.
pub enum Hold<'a> {
    Shared(RwLockReadGuard<'a, ()>),
    Alone(RwLockWriteGuard<'a, ()>),
}

/// One lock per bus: shared for data checks, alone for speed. A waiting
/// speed step keeps new data checks out (std's RwLock on Linux lets no new
/// reader in while a writer waits), so it is not starved.
#[derive(Default)]
pub struct Buses {
    locks: Mutex<BTreeMap<String, Arc<RwLock<()>>>>,
}

impl Buses {
    /// The lock of `bus`, made on first use.
    pub fn lock_of(&self, bus: &str) -> Arc<RwLock<()>> {
        let mut m = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        m.entry(bus.to_string()).or_default().clone()
    }
}

/// Take `lock` for `how`. A lock poisoned by a panicked step is taken
/// anyway: the step's own device is the one that failed.
pub fn hold(lock: &RwLock<()>, how: Use) -> Hold<'_> {
    match how {
        Use::Shared => Hold::Shared(lock.read().unwrap_or_else(|p| p.into_inner())),
        Use::Alone => Hold::Alone(lock.write().unwrap_or_else(|p| p.into_inner())),
    }
}

/// One step of one device, from its start to its end, in seconds since
/// the batch began.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub slot: String,
    pub bus: String,
    pub step: String,
    pub how: Use,
    pub from_s: f64,
    pub to_s: f64,
}

/// Every step's span, for "what ran beside it".
pub struct Timeline {
    start: Instant,
    spans: Mutex<Vec<Span>>,
}

impl Timeline {
    pub fn new() -> Self {
        Timeline {
            start: Instant::now(),
            spans: Mutex::new(Vec::new()),
        }
    }

    /// Seconds since the batch began.
    pub fn now_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    pub fn record(&self, span: Span) {
        self.spans.lock().unwrap_or_else(|p| p.into_inner()).push(span);
    }

    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

/// Wall seconds `slot`'s steps held their bus alone.
pub fn alone_s(spans: &[Span], slot: &str) -> f64 {
    spans
        .iter()
        .filter(|s| s.slot == slot && s.how == Use::Alone)
        .map(|s| s.to_s - s.from_s)
        // From +0.0: an empty f64 sum is -0.0, which batch's JSON showed
        // as "speed_s": -0.0 for a device that ran no speed step.
        .fold(0.0, |all, s| all + s)
}

/// What ran on other devices while `slot`'s steps that held their bus
/// alone ran: "sdc (capacity, usb 0000:00:14.0)", each once, in order.
pub fn beside(spans: &[Span], slot: &str) -> Vec<String> {
    let mine: Vec<&Span> = spans.iter().filter(|s| s.slot == slot && s.how == Use::Alone).collect();
    let mut out: Vec<String> = Vec::new();
    for o in spans.iter().filter(|s| s.slot != slot) {
        if mine.iter().any(|m| o.from_s < m.to_s && m.from_s < o.to_s) {
            let line = format!("{} ({}, {})", o.slot, o.step, o.bus);
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(slot: &str, bus: &str, step: &str, how: Use, from_s: f64, to_s: f64) -> Span {
        Span {
            slot: slot.into(),
            bus: bus.into(),
            step: step.into(),
            how,
            from_s,
            to_s,
        }
    }

    #[test]
    fn beside_names_what_overlapped_a_speed_step_only() {
        let spans = vec![
            span("a", "usb 1", "capacity", Use::Shared, 0.0, 10.0),
            span("b", "usb 1", "capacity", Use::Shared, 0.0, 12.0),
            span("a", "usb 1", "bench", Use::Alone, 12.0, 20.0),
            span("c", "fs 0:40", "capacity", Use::Shared, 15.0, 30.0),
            span("b", "usb 1", "bench", Use::Alone, 20.0, 28.0),
        ];
        assert_eq!(beside(&spans, "a"), vec!["c (capacity, fs 0:40)"]);
        assert_eq!(beside(&spans, "b"), vec!["c (capacity, fs 0:40)"]);
        assert!(beside(&spans, "c").is_empty(), "c measured no speed");
        assert_eq!(alone_s(&spans, "a"), 8.0);
        let none = alone_s(&spans, "c");
        assert!(none == 0.0 && none.is_sign_positive(), "{none:?}");
    }

    /// A bus held alone keeps a second user out until it is let go; shared
    /// holds coexist; different buses never wait for each other.
    #[test]
    fn a_speed_step_holds_its_bus_alone() {
        let buses = Buses::default();
        let (one, other) = (buses.lock_of("usb 1"), buses.lock_of("usb 2"));
        assert!(Arc::ptr_eq(&one, &buses.lock_of("usb 1")));
        {
            let _a = hold(&one, Use::Shared);
            let _b = hold(&one, Use::Shared);
            assert!(one.try_write().is_err());
        }
        let alone = hold(&one, Use::Alone);
        assert!(one.try_read().is_err());
        let _elsewhere = hold(&other, Use::Alone);
        drop(alone);
        assert!(one.try_read().is_ok());
    }
}
