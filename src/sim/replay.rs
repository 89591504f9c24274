//! A block trace replayed on a simulated card (`life`): each request the
//! device received, at the time it arrived, through the same host and card
//! model as any test, but with no data. A trace says where and how much,
//! never what, so the card's flash work and timing are all a replay can
//! and needs to give; the store, the fake-card cache and the bad ranges
//! are never touched.

use serde::{Deserialize, Serialize};

use super::SimTarget;
use crate::targets::{Op, Request};

/// What a traced request asked of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceOp {
    Read,
    Write,
    /// TRIM or SD's erase: the range's data is no longer wanted.
    Discard,
    /// A cache flush (or a FUA write's barrier): wait for what came before.
    Flush,
}

/// One request a device received, as a trace records it. Offsets and
/// lengths in bytes (the traces count 512-byte sectors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRecord {
    /// When the device received it, from the trace's own clock.
    pub time_ns: u64,
    pub op: TraceOp,
    pub offset: u64,
    pub len: u64,
}

/// One replayed request: when it completed on the model's clock, and the
/// part of its wait that was the card merging AUs or collecting blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Replayed {
    pub complete_ns: u64,
    pub merge_ns: u64,
}

/// A request the card cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("a request at byte {offset} of {len} bytes runs past the card's end at {size} bytes")]
    PastEnd { offset: u64, len: u64, size: u64 },
    /// The replay's time reached [`CLOCK_LIMIT_NS`]: a card too slow for
    /// the trace to be replayed on the model's clock.
    #[error("the replay reached {years} years of the card's time, more than the model's clock keeps")]
    PastClock { years: u64 },
}

/// Half the model's clock (u64 nanoseconds hold 584 years): a replay
/// stops with [`ReplayError::PastClock`] past it. One piece of a request
/// takes far less than the other half on any card Params::validate lets
/// through (the card written whole in at most ten years; a merge of the
/// largest AU at the longest page copy, under a year).
pub const CLOCK_LIMIT_NS: u64 = u64::MAX / 2;

/// The most bytes one replayed command moves: larger requests (a discard
/// of the whole card, a merged read the trace kept whole) go as several,
/// as the block layer splits them for a real card.
const MAX_PIECE: u64 = 1 << 30;

impl SimTarget {
    /// Replay `r`, arriving at `r.time_ns` on the model's clock plus
    /// `clock_offset_ns` (a replay repeated shifts each pass past the last).
    /// Reads and writes wait for the host's queue (`queue_depth` and
    /// `in_flight`, the smaller) and the card as [`SimTarget::serve_at`]'s
    /// do, in O(1) a request however far behind the card falls; a
    /// discard changes the flash's state and costs the card one access;
    /// a flush completes when the card has finished what came before (the
    /// model has no write cache to empty).
    /// Ranges are widened to whole sectors of the card.
    pub fn replay(&mut self, r: &TraceRecord, clock_offset_ns: u64) -> Result<Replayed, ReplayError> {
        let arrival = r.time_ns.saturating_add(clock_offset_ns);
        let sector = u64::from(self.params.sector_size.max(1));
        let start = r.offset / sector * sector;
        let end = r
            .offset
            .checked_add(r.len)
            .and_then(|e| e.checked_next_multiple_of(sector))
            .filter(|&e| e <= self.params.capacity)
            .ok_or(ReplayError::PastEnd {
                offset: r.offset,
                len: r.len,
                size: self.params.capacity,
            })?;
        let before = self.counters.merge_ns;
        let complete = match r.op {
            TraceOp::Read | TraceOp::Write if end > start => {
                let op = if r.op == TraceOp::Read { Op::Read } else { Op::Write };
                let mut complete = arrival;
                let mut at = start;
                while at < end {
                    let now = self.card_free.max(arrival);
                    if now > CLOCK_LIMIT_NS {
                        return Err(ReplayError::PastClock {
                            years: now / crate::units::YEAR_NS,
                        });
                    }
                    let n = (end - at).min(MAX_PIECE);
                    let req = Request {
                        op,
                        offset: at,
                        len: n as u32,
                        buf_offset: 0,
                    };
                    complete = self.queued(arrival, &req);
                    at += n;
                }
                complete
            }
            _ if arrival.max(self.card_free) > CLOCK_LIMIT_NS => {
                return Err(ReplayError::PastClock {
                    years: arrival.max(self.card_free) / crate::units::YEAR_NS,
                });
            }
            TraceOp::Read | TraceOp::Write | TraceOp::Flush => arrival.max(self.card_free),
            TraceOp::Discard => {
                self.discard(start, end - start);
                let at = arrival.max(self.card_free) + self.params.card_access_ns;
                self.card_free = at;
                at + self.params.host_overhead_ns
            }
        };
        self.now = self.now.max(complete);
        self.counters.gc_events = self.ftl.work.merges;
        Ok(Replayed {
            complete_ns: complete,
            merge_ns: self.counters.merge_ns - before,
        })
    }

    /// Discard `len` bytes at `off`: the flash's state as
    /// [`crate::sim::ftl::Ftl::discard`] changes it, and the data gone (it
    /// reads as erased). What `emulate` does with the loop device's
    /// discards, and a replay with a trace's.
    pub fn discard(&mut self, off: u64, len: u64) {
        self.ftl.discard(&self.params, off, len);
        self.store.forget(off, len);
    }

    /// Serve `req` arriving at `arrival` once the host's queue has room:
    /// the queue holds the completion times of the last requests, so the
    /// one `depth` back is the one this request waits for.
    fn queued(&mut self, arrival: u64, req: &Request) -> u64 {
        let depth = (self.params.queue_depth.max(1) as usize).min(self.params.in_flight.max(1) as usize);
        let mut host_start = arrival;
        if self.queue.len() >= depth
            && let Some(oldest) = self.queue.pop_front()
        {
            host_start = host_start.max(oldest);
        }
        let complete = self.schedule(req, host_start);
        self.queue.push_back(complete);
        complete
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(time_ns: u64, offset: u64, len: u64) -> TraceRecord {
        TraceRecord {
            time_ns,
            op: TraceOp::Write,
            offset,
            len,
        }
    }

    #[test]
    fn a_replayed_write_costs_what_the_same_write_costs_through_run() {
        use crate::targets::{AlignedBuf, Target};
        let spec = "sim:demo,keep_data=false";
        let mut ran = SimTarget::from_spec(spec).unwrap();
        let mut buf = AlignedBuf::new(1 << 16);
        let c = ran.run(&[Request::write(1 << 20, 1 << 16, 0)], 1, &mut buf).unwrap();
        let mut replayed = SimTarget::from_spec(spec).unwrap();
        let r = replayed.replay(&write(0, 1 << 20, 1 << 16), 0).unwrap();
        assert_eq!(r.complete_ns, c[0].duration_ns);
        assert_eq!(replayed.ftl.work, ran.ftl.work);
        assert_eq!(replayed.counters, ran.counters);
    }

    #[test]
    fn requests_wait_for_the_queue_and_a_flush_for_the_card() {
        let mut t = SimTarget::from_spec("sim:demo,queue_depth=1").unwrap();
        let a = t.replay(&write(0, 0, 1 << 20), 0).unwrap();
        let b = t.replay(&write(0, 1 << 20, 1 << 20), 0).unwrap();
        assert!(b.complete_ns > a.complete_ns, "the second waits for the first");
        let f = t
            .replay(
                &TraceRecord {
                    time_ns: 0,
                    op: TraceOp::Flush,
                    offset: 0,
                    len: 0,
                },
                0,
            )
            .unwrap();
        assert!(
            f.complete_ns > a.complete_ns && f.complete_ns <= b.complete_ns,
            "{f:?} {a:?} {b:?}"
        );
        assert_eq!(t.counters.bytes_written, 2 << 20);
    }

    #[test]
    fn past_the_end_is_refused_and_nothing_changes() {
        let mut t = SimTarget::from_spec("sim:demo").unwrap();
        let size = t.params.capacity;
        let e = t.replay(&write(0, size, 4096), 0).unwrap_err();
        assert_eq!(
            e,
            ReplayError::PastEnd {
                offset: size,
                len: 4096,
                size
            }
        );
        assert!(t.replay(&write(0, u64::MAX - 10, 4096), 0).is_err());
        assert_eq!(t.counters.requests, 0);
    }

    #[test]
    fn a_discarded_open_au_closes_without_copies() {
        let spec = "sim:demo,open_aus_linear=1,open_aus_random=0,fat_area_aus=0";
        let mut kept = SimTarget::from_spec(spec).unwrap();
        let mut trimmed = SimTarget::from_spec(spec).unwrap();
        let au = kept.params.au_size;
        for t in [&mut kept, &mut trimmed] {
            t.replay(&write(0, 0, 4096), 0).unwrap();
        }
        let discard = TraceRecord {
            time_ns: 1,
            op: TraceOp::Discard,
            offset: 0,
            len: au,
        };
        trimmed.replay(&discard, 0).unwrap();
        for t in [&mut kept, &mut trimmed] {
            t.replay(&write(2, 4 * au, 4096), 0).unwrap();
        }
        let pages = au / kept.params.page_size;
        let written = 4096 / kept.params.page_size;
        assert_eq!(kept.ftl.work.merge_copies, pages - written, "the open AU's rest copied");
        assert_eq!(trimmed.ftl.work.merge_copies, 0);
        assert_eq!(trimmed.ftl.work.merges, 0);
    }
}
