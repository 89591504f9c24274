//! Requests enter the card model in the order the kernel queued them.
//!
//! The FUSE threads race from the read of /dev/fuse to the model (a
//! 512 KiB write is copied on the way), and a card that sees a sequential
//! write's pieces out of order treats them as random writes: with the
//! threads' own order, 3 of 10 split 1 MiB writes reached sim:kingston-sa04g
//! second piece first, and fio got 2.4 of the model's 5.1 IOPS. The
//! kernel numbers each request it queues (the FUSE header's `unique`,
//! in steps of 2 since Linux 5.0, of 1 before), so a request waits until
//! every lower number has been seen, for a short while at most: numbers
//! also go to requests that never reach this code (fuser answers some
//! itself), and those are given up on.

use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a request waits for a lower number that has not reached this
/// code: more than a real-time thread takes to copy a 512 KiB write out of
/// the kernel (the split pieces came 10-20 µs apart), and short beside a
/// card's write, since numbers fuser answers by itself come to nothing.
pub const PATIENCE: Duration = Duration::from_micros(500);
/// How long past that a request waits for lower numbers that have arrived
/// (they wait for the model, which takes 0.6 ms to take in a 512 KiB
/// write): only a thread that never came back would make it wait so long.
const BACKSTOP: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
struct State {
    /// Every number up to this one has been dealt with or given up on
    /// (None before the first).
    floor: Option<u64>,
    /// Numbers above the floor dealt with already.
    seen: BTreeSet<u64>,
    /// Numbers that have reached this code and wait for their turn.
    arrived: BTreeSet<u64>,
    /// The kernel's step: 2, or 1 once an odd number shows.
    odd: bool,
    /// Requests that reached this code after the floor had passed them
    /// (given up on, a later one went first): the model took them out of
    /// the kernel's order.
    overtaken: u64,
}

impl State {
    fn step(&self) -> u64 {
        if self.odd { 1 } else { 2 }
    }

    /// Note `unique`; the first number noted sets the floor below it.
    fn note(&mut self, unique: u64) {
        self.odd |= unique % 2 == 1;
        if self.floor.is_none() {
            self.floor = Some(unique.saturating_sub(self.step()));
        }
    }

    fn see(&mut self, unique: u64) {
        self.note(unique);
        self.arrived.remove(&unique);
        if self.floor.is_some_and(|f| unique > f) {
            self.seen.insert(unique);
        }
        self.advance();
    }

    fn advance(&mut self) {
        let step = self.step();
        let Some(mut floor) = self.floor else { return };
        while self.seen.remove(&(floor + step)) {
            floor += step;
        }
        // Anything at or below the floor is no longer needed.
        while self.seen.first().is_some_and(|&u| u <= floor) {
            self.seen.pop_first();
        }
        self.floor = Some(floor);
    }

    /// Give up on the numbers below `unique` that have not arrived.
    fn give_up_below(&mut self, unique: u64) {
        let step = self.step();
        let Some(mut floor) = self.floor else { return };
        loop {
            let next = floor + step;
            if next >= unique || self.arrived.contains(&next) {
                break;
            }
            floor = next;
            self.seen.remove(&next);
            self.floor = Some(floor);
            self.advance();
            floor = self.floor.unwrap_or(floor);
        }
    }

    /// Whether every number below `unique` has been dealt with.
    fn turn_of(&self, unique: u64) -> bool {
        self.floor.is_none_or(|f| f + self.step() >= unique)
    }
}

/// The kernel's order of the requests, as they are seen.
#[derive(Debug, Default)]
pub struct Order {
    state: Mutex<State>,
    turn: Condvar,
}

impl Order {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Requests the model took after a later one: each came later than
    /// [`PATIENCE`] allowed (a loaded machine), and a card that sees a
    /// sequential write's pieces out of order treats them as random writes.
    pub fn overtaken(&self) -> u64 {
        self.lock().overtaken
    }

    /// Request `unique` has been dealt with (answered, refused, or entered
    /// the model): later ones need not wait for it.
    pub fn seen(&self, unique: u64) {
        self.lock().see(unique);
        self.turn.notify_all();
    }

    /// Wait until every request numbered below `unique` has been dealt
    /// with. Lower numbers that have not reached this code by `deadline`
    /// are given up on; those that have are waited for (they are on their
    /// way into the model), for [`BACKSTOP`] at most. The caller enters
    /// the model and then calls [`Order::seen`].
    pub fn wait_turn(&self, unique: u64, deadline: Instant) {
        let mut s = self.lock();
        if s.floor.is_some_and(|f| unique <= f) {
            s.overtaken += 1;
        }
        s.note(unique);
        s.arrived.insert(unique);
        let backstop = deadline + BACKSTOP;
        while !s.turn_of(unique) {
            let now = Instant::now();
            if now >= backstop {
                s.arrived.retain(|&u| u >= unique);
            }
            if now >= deadline {
                s.give_up_below(unique);
                if s.turn_of(unique) {
                    break;
                }
            }
            let until = if now < deadline {
                deadline
            } else {
                backstop.max(now + PATIENCE)
            };
            s = self
                .turn
                .wait_timeout(s, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_first_seen_sets_the_floor_and_steps_of_two_advance_it() {
        let o = Order::default();
        o.seen(10);
        let s = |o: &Order| o.lock().floor;
        assert_eq!(s(&o), Some(10));
        o.seen(14);
        assert_eq!(s(&o), Some(10), "12 is missing");
        o.seen(12);
        assert_eq!(s(&o), Some(14));
    }

    #[test]
    fn a_request_waits_for_a_lower_number_then_goes_first() {
        let o = Arc::new(Order::default());
        o.seen(100);
        let entered = Arc::new(Mutex::new(Vec::new()));
        // 104 comes first and waits for 102.
        let (o2, e2) = (o.clone(), entered.clone());
        let later = std::thread::spawn(move || {
            o2.wait_turn(104, Instant::now() + Duration::from_secs(10));
            e2.lock().unwrap().push(104);
            o2.seen(104);
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(entered.lock().unwrap().is_empty(), "104 waits");
        o.wait_turn(102, Instant::now() + Duration::from_secs(10));
        entered.lock().unwrap().push(102);
        o.seen(102);
        later.join().unwrap();
        assert_eq!(*entered.lock().unwrap(), vec![102, 104]);
    }

    #[test]
    fn a_number_never_seen_is_given_up_on_at_the_deadline() {
        let o = Order::default();
        o.seen(2);
        let t0 = Instant::now();
        o.wait_turn(8, t0 + Duration::from_millis(5));
        assert!(t0.elapsed() >= Duration::from_millis(5));
        o.seen(8);
        // 4 and 6 are given up on: 10 goes at once.
        let t1 = Instant::now();
        o.wait_turn(10, t1 + Duration::from_secs(10));
        assert!(t1.elapsed() < Duration::from_secs(5));
        assert_eq!(o.overtaken(), 0, "nothing came out of turn yet");
        // 4 comes after all: it goes at once, counted as taken out of order.
        o.seen(10);
        let t2 = Instant::now();
        o.wait_turn(4, t2 + Duration::from_secs(10));
        assert!(t2.elapsed() < Duration::from_secs(5));
        assert_eq!(o.overtaken(), 1);
    }

    #[test]
    fn a_lower_number_that_arrived_is_waited_for_past_the_deadline() {
        let o = Arc::new(Order::default());
        o.seen(2);
        // 6 arrives, and waits for 4, which never comes.
        let o2 = o.clone();
        let six = std::thread::spawn(move || {
            o2.wait_turn(6, Instant::now() + Duration::from_millis(5));
            // When 6 entered: before it is seen, which is what lets 8 go.
            let entered = Instant::now();
            o2.seen(6);
            entered
        });
        while !o.lock().arrived.contains(&6) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // 8 has a deadline already past, but 6 has arrived: it waits for 6.
        o.wait_turn(8, Instant::now());
        let eight = Instant::now();
        o.seen(8);
        assert!(six.join().unwrap() <= eight, "6 entered before 8");
    }

    #[test]
    fn odd_numbers_mean_steps_of_one() {
        let o = Order::default();
        o.seen(5);
        o.seen(6);
        assert_eq!(o.lock().floor, Some(6));
    }
}
