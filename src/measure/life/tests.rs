//! The closed forms a replay must meet, through `card_life` on generated
//! traces, as the issue that asked for `life` set them.

use super::*;
use crate::sim::replay::TraceOp;

/// A generated trace, read from its start at every pass.
impl Source for Vec<TraceRecord> {
    type Error = LifeError;
    fn pass(&mut self, sink: &mut dyn FnMut(&TraceRecord) -> Result<(), LifeError>) -> Result<(), LifeError> {
        self.iter().try_for_each(sink)
    }
}

fn writes(offsets: impl Iterator<Item = u64>, len: u64) -> Vec<TraceRecord> {
    offsets
        .enumerate()
        .map(|(i, offset)| TraceRecord {
            time_ns: i as u64 * 1_000_000,
            op: TraceOp::Write,
            offset,
            len,
        })
        .collect()
}

/// xorshift64: a fixed stream, uniform enough for these.
fn uniform(n: usize, below: u64) -> impl Iterator<Item = u64> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % below
    })
}

fn life(spec: &str, trace: &mut Vec<TraceRecord>, start: Start) -> CardLife {
    let card = SimTarget::from_spec(spec).unwrap();
    let how = Replay { start, pe: None };
    card_life(spec, card, trace, &Variant::default(), how).unwrap()
}

#[test]
fn a_sequential_full_card_write_amplifies_by_exactly_one() {
    let spec = "sim:demo,capacity=256M";
    let size = 256 << 20;
    let mut trace = writes((0..size / (512 << 10)).map(|i| i * (512 << 10)), 512 << 10);
    for start in [Start::Fresh, Start::Steady] {
        let l = life(spec, &mut trace, start);
        assert_eq!(l.waf, Some(1.0), "{start:?}");
        assert_eq!(l.flash_bytes_written, size);
        assert_eq!(l.by_cause.host, size);
        assert_eq!((l.by_cause.merge, l.by_cause.gc, l.by_cause.partial_page), (0, 0, 0));
        assert!(l.settled);
    }
}

/// 4 KiB writes uniform over far more AUs than are open: each closes an
/// AU, copying the pages after its write (the head stays: see
/// `sim::ftl::log::Logs::close`), so a 4 KiB write in 16 KiB pages of a
/// 4 MiB AU amplifies by 2 (P + 1) + 3 = 517 (P = 256 pages), about AU /
/// (2 x write). Bergmann's AU / write (1,024) copies the head too, which
/// the seeds' timing refuses (`calibration/README.md`).
#[test]
fn small_random_writes_amplify_by_the_au_ratio_the_model_keeps() {
    let spec = "sim:demo,capacity=8G,au_size=4M,page_size=16K,open_aus_linear=4,open_aus_random=2,fat_area_aus=0";
    let mut trace = writes(uniform(20_000, (8u64 << 30) / 4096).map(|s| s * 4096), 4096);
    let pages = 256.0;
    let want = 2.0 * (pages + 1.0) + 3.0;
    for start in [Start::Fresh, Start::Steady] {
        let l = life(spec, &mut trace, start);
        let got = l.waf.unwrap();
        assert!((got / want - 1.0).abs() < 0.02, "{start:?}: {got:.1} against {want}");
        assert_eq!(l.by_cause.partial_page, 20_000 * 16384);
    }
}

/// Page-mapped flash under uniform random page writes, at steady state:
/// within 6% of Desnoyers' closed form (5.18, 2.69, 1.88 at spare 0.1,
/// 0.2, 0.3). Greedy cleaning lands a few percent below it.
#[test]
fn page_mapped_random_writes_meet_desnoyers() {
    for spare in [0.1, 0.2, 0.3] {
        let spec = format!("sim:demo,capacity=64M,au_size=256K,page_size=4K,page_mapped=true,spare={spare}");
        let pages = (64u64 << 20) / 4096;
        let mut trace = writes(uniform(4 * pages as usize, pages).map(|p| p * 4096), 4096);
        let l = life(&spec, &mut trace, Start::Steady);
        let want = crate::sim::ftl::desnoyers(spare);
        let got = l.waf.unwrap();
        assert!(
            (got / want - 1.0).abs() < 0.06,
            "spare {spare}: {got:.2} against {want:.2}"
        );
        assert!(l.settled, "spare {spare}: {} passes", l.passes);
        assert_eq!(l.by_cause.gc + l.by_cause.host, l.flash_bytes_written);
    }
}

/// Holding writes for an interval writes a block rewritten within it once.
#[test]
fn coalescing_writes_a_rewritten_block_once() {
    let spec = "sim:demo,capacity=256M";
    // The same 4 KiB block 1,000 times, a millisecond apart: one second.
    let mut trace = writes(std::iter::repeat_n(1 << 20, 1000), 4096);
    let card = SimTarget::from_spec(spec).unwrap();
    let how = Replay {
        start: Start::Fresh,
        pe: None,
    };
    let held = Variant {
        coalesce_ns: Some(10_000_000_000),
        ..Variant::default()
    };
    let l = card_life(spec, card, &mut trace, &held, how).unwrap();
    assert_eq!(l.host_bytes_written, 4096);
    let plain = life(spec, &mut trace, Start::Fresh);
    assert_eq!(plain.host_bytes_written, 4096 * 1000);
}

#[test]
fn a_shift_past_the_end_is_refused() {
    let spec = "sim:demo,capacity=256M";
    let mut trace = writes([255u64 << 20].into_iter(), 4096);
    let card = SimTarget::from_spec(spec).unwrap();
    let how = Replay {
        start: Start::Fresh,
        pe: None,
    };
    let moved = Variant {
        shift: 1 << 20,
        ..Variant::default()
    };
    let e = card_life(spec, card, &mut trace, &moved, how).unwrap_err();
    assert!(matches!(
        e,
        LifeError::Card(crate::sim::replay::ReplayError::PastEnd { .. })
    ));
}
