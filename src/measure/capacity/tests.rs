use super::tag::{check, tag};
use super::*;
use crate::measure::Test;
use crate::sim::SimTarget;
use crate::targets::{Target, TargetDescription};
use crate::units::Iec;

/// A run's nonce, fixed: the tests need no clock.
const NONCE: u64 = 0x005e_ed0f_f1a5_1ab1;

/// The whole check on a simulated card, each stage on a fresh card as
/// the runner does (so nothing of an earlier stage is left).
/// A simulated card's parameters from its spec, as the CLI reads it.
fn params_of(spec: &str) -> crate::sim::params::Params {
    SimTarget::from_spec(spec).unwrap().params
}

pub(crate) fn check_card(spec: &str) -> (CapacityResult, f64) {
    check_card_on(spec, false)
}

/// With `persistent`, every stage on one card, as on a real device: a
/// fake's write cache still holds what the last stage wrote.
fn check_card_on(spec: &str, persistent: bool) -> (CapacityResult, f64) {
    let params = params_of(spec);
    let mut kept = SimTarget::new(spec, params.clone());
    let o = Options::new(DEFAULT_SKIP, DEFAULT_PUSH, DEFAULT_FLUSH, NONCE);
    let mut stages = Vec::new();
    let mut window = None;
    let mut device_s = 0.0;
    loop {
        let mut fresh = SimTarget::new(spec, params.clone());
        let t = if persistent { &mut kept } else { &mut fresh };
        let before = t.device_time_ns();
        let s = Stage {
            options: o,
            window,
            flush: window.is_none() || cache_seen(&stages),
            canary: window.and_then(|w| canary_for(&stages, &o, w, t.description().size_bytes, 512)),
            lap: lap(&stages),
            flush_budget_ns: u64::MAX,
        };
        let ranges = s.plan(t.description()).unwrap();
        assert!(ranges.iter().all(|r| r.offset >= DEFAULT_SKIP), "first MiB untouched");
        stages.push(crate::measure::run_alone(&s, t).unwrap());
        device_s += (t.device_time_ns() - before) as f64 / 1e9;
        match next(&stages, t.description().size_bytes) {
            Next::Done => break,
            Next::Narrow(lo, hi) => window = Some((lo, hi)),
            Next::Reads(lo, hi) => {
                stages.push(crate::measure::run_alone(&Boundary { lo, hi }, t).unwrap());
                match next(&stages, t.description().size_bytes) {
                    Next::Narrow(lo, hi) => window = Some((lo, hi)),
                    Next::Done | Next::Reads(..) => break,
                }
            }
        }
    }
    let d = SimTarget::new(spec, params).description().clone();
    let r = verdict(&stages, &d, &o);
    eprintln!(
        "{spec}: {:?} {:?} usable {} in {} stage(s), {device_s:.1} device-s, wrote {}",
        r.verdict,
        r.kind,
        r.usable_bytes,
        r.stages,
        Iec(r.bytes_written)
    );
    (r, device_s)
}

#[test]
fn tags_name_their_address_and_a_moved_block_is_recognised() {
    let mut a = vec![0u8; 8192];
    tag(7, 1 << 20, 512, &mut a);
    let mut s = Vec::new();
    assert_eq!(check(7, 1 << 20, 512, &a, &mut s), (8192, None));
    assert_eq!(
        check(7, (1 << 20) + 4096, 512, &a[..4096], &mut s),
        (0, Some(Evidence::Foreign { from: 1 << 20 }))
    );
    assert_eq!(
        check(8, 1 << 20, 512, &a, &mut s),
        (0, Some(Evidence::Other)),
        "another run's"
    );
    a[5000] ^= 1;
    assert_eq!(check(7, 1 << 20, 512, &a, &mut s), (4608, Some(Evidence::Other)));
}

#[test]
fn genuine_cards_pass() {
    for p in ["demo", "kingston-sa04g"] {
        let (r, s) = check_card(&format!("sim:{p}"));
        assert_eq!(r.verdict, Verdict::Genuine, "{p}: {r:?}");
        assert_eq!(r.usable_bytes, r.announced_bytes);
        // A cache of 64 MiB cannot hide a fake, and a genuine
        // card still gets well under 256 MiB written, the restore of
        // the dense region included (the rest of the flush rewrote
        // what was there).
        assert!(r.flush_bytes > 64 << 20, "{p}: {}", r.flush_bytes);
        assert!(r.bytes_written + r.push_bytes < 128 << 20, "{p}: {}", r.bytes_written);
        assert!(s < 180.0, "{p}: {s} device-seconds");
    }
}

#[test]
fn every_fake_kind_is_found_with_its_real_size() {
    let real: u64 = 7_948_206_080; // a real 8 GB card's size, not a power of two
    for (mode, cache, kind) in [
        ("wrap", "0", FakeKind::Wrap),
        ("drop-zeros", "0", FakeKind::Drop),
        ("drop-stale", "0", FakeKind::Drop),
        ("drop-zeros", "4M", FakeKind::Cache),
        // Smaller than the push's first MiB (was "drop").
        ("drop-zeros", "512K", FakeKind::Cache),
        // Larger than the 32 MiB push (48 MiB was "genuine"),
        // and the 64 MiB the default flush promises.
        ("drop-zeros", "48M", FakeKind::Cache),
        ("drop-zeros,sector_size=4096", "64M", FakeKind::Cache),
    ] {
        let spec = format!("sim:demo,capacity=64G,real_capacity={real},fake_mode={mode},write_cache={cache}");
        let (r, s) = check_card(&spec);
        assert_eq!(r.verdict, Verdict::Fake, "{spec}: {r:?}");
        assert_eq!(r.kind, Some(kind), "{spec}");
        assert_eq!(r.usable_bytes, real, "{spec}: to the block");
        assert!(s < 60.0, "{spec}: {s} device-seconds");
    }
    // One card through every stage, as on a real device: the cache
    // still holds the last stage's flush when the next begins. (The
    // emulated card of tests/integration/emulate.rs is the sharper
    // check: there a flush over the same region as the last stage's
    // let 1.31 GiB of 1 be called usable; here the model's cache lets
    // a rewrite in order roll it out anyway.)
    for cache in ["512K", "8M", "48M", "64M"] {
        let spec = format!("sim:demo,capacity=16G,real_capacity=1G,fake_mode=drop-zeros,write_cache={cache}");
        let (r, _) = check_card_on(&spec, true);
        assert_eq!(
            (r.kind, r.usable_bytes),
            (Some(FakeKind::Cache), 1 << 30),
            "{spec}: {r:?}"
        );
    }
    // Chain: a wrap at 2 GiB whose last 512 MiB lose their
    // writes; the usable size is where the data ends, as f3probe says
    // (1610612736), not the wrap point. With 4096-byte sectors too.
    for (spec, real) in [
        (
            "sim:demo,capacity=8G,real_capacity=1536M,fake_mode=chain,fake_module=2G",
            1536u64 << 20,
        ),
        (
            "sim:demo,capacity=16G,sector_size=4096,real_capacity=1000M,fake_mode=chain,fake_module=3G",
            1000 << 20,
        ),
    ] {
        let (r, _) = check_card(spec);
        assert_eq!((r.kind, r.usable_bytes), (Some(FakeKind::Chain), real), "{spec}: {r:?}");
        let mut text = String::new();
        <show::Presenter as crate::measure::registry::Registered>::text(&r, 0.0, &mut text);
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("lost, and further on addresses wrap"), "{text}");
    }
    // Refusing reads and writes past 300 MiB of 4 GiB (no
    // verdict, the narrowing window's journal could not read its
    // originals): found by reads, to the block, nothing more written.
    for spec in [
        "sim:demo,capacity=4G,bad_ranges=300M+3796M",
        "sim:demo,capacity=4G,sector_size=4096,bad_ranges=300M+3796M",
    ] {
        let (r, _) = check_card(spec);
        assert_eq!(
            (r.kind, r.usable_bytes),
            (Some(FakeKind::Drop), 300 << 20),
            "{spec}: {r:?}"
        );
        assert_eq!(r.reads_past.as_deref(), Some("I/O errors"));
        assert!(
            r.bytes_written < DEFAULT_FLUSH + (1 << 20),
            "{spec}: {}",
            r.bytes_written
        );
    }
    let (r, _) = check_card("sim:demo,capacity=64G,real_capacity=8G,fake_mode=wrap");
    assert_eq!(
        (r.kind, r.usable_bytes),
        (Some(FakeKind::Wrap), 8 << 30),
        "a power of two"
    );
}

/// A stage that flushes a cache pays that flush again, so over a window a
/// few AUs wide it spreads enough samples that the stage after it covers
/// the window block by block: a card with a 48 MiB cache is found to the
/// block in four stages, not five.
#[test]
fn a_flushing_stage_a_few_aus_wide_leaves_the_next_block_by_block() {
    // A few AUs wide, flushing: enough samples that the next window,
    // 25,600 blocks over 201, is covered block by block; 41 MiB wide (a 48
    // MiB cache card's third stage): 83.
    assert_eq!(layout::sample_count(Some((0, 100 << 20)), true, 4096), 200);
    assert_eq!(layout::sample_count(Some((0, 43_032_576)), true, 4096), 83);
    let o = Options::new(DEFAULT_SKIP, DEFAULT_PUSH, DEFAULT_FLUSH, NONCE);
    let w = (1 << 30, (1 << 30) + (100 << 20));
    let spread = layout::samples(&o, Some(w), 4 << 30, 512, 200);
    assert_eq!(spread.len(), 200);
    let gap = spread.windows(2).map(|p| p[1].offset - p[0].end()).max().unwrap();
    assert!(gap / 4096 <= layout::CLOSE_SAMPLES, "{gap}");
    // 256 blocks or fewer: each of them.
    let w = (1 << 30, (1 << 30) + 200 * 4096);
    assert_eq!(layout::sample_count(Some(w), true, 4096), 200);
    let spread = layout::samples(&o, Some(w), 4 << 30, 512, 200);
    assert_eq!((spread.len(), spread[0].offset, spread[199].end()), (200, w.0, w.1));
    let (r, _) = check_card_on(
        "sim:demo,capacity=4G,real_capacity=1G,fake_mode=drop-zeros,write_cache=48M",
        true,
    );
    assert_eq!((r.kind, r.usable_bytes), (Some(FakeKind::Cache), 1 << 30), "{r:?}");
    assert_eq!(r.stages, 4);
}

/// A fake that loses a sample at once (no cache kept it) pays for the
/// dense region alone after its samples, not the rest of the flush (the
/// CLI's priced survey tags only part of it: `cut_dense`), and
/// its first narrowing stage over a window hundreds of AUs wide writes a
/// few samples, not 32 merges' worth; a cache fake still pays the whole
/// flush, since its samples read back right at first.
#[test]
fn a_write_lost_at_once_cuts_the_flush_and_wide_windows_take_few_samples() {
    let lost = "sim:demo,capacity=4G,real_capacity=300M,fake_mode=drop-zeros";
    let (r, s) = check_card(lost);
    assert_eq!((r.kind, r.usable_bytes), (Some(FakeKind::Drop), 300 << 20), "{r:?}");
    assert_eq!(r.flush_bytes, r.push_bytes, "the dense region alone");
    // Survey: 2 samples and the last block; then 8 over 1.4 GB and
    // 8 over the 150 MiB between the samples that split it.
    let survey = layout::samples(
        &Options::new(DEFAULT_SKIP, DEFAULT_PUSH, DEFAULT_FLUSH, NONCE),
        None,
        4 << 30,
        512,
        SURVEY_SAMPLES,
    );
    assert_eq!(survey.len(), 3);
    assert_eq!(
        layout::sample_count(Some((0, 1454723072)), false, 4096),
        layout::WIDE_SAMPLES
    );
    assert_eq!(
        layout::sample_count(Some((0, 1454723072)), true, 4096),
        SAMPLES,
        "a flushing stage"
    );
    assert_eq!(
        layout::sample_count(Some((0, 100 << 20)), false, 4096),
        SAMPLES,
        "a few AUs wide"
    );
    assert!(s < 7.0, "{s} device-seconds (10.0 before either rule)");
    // How much of the dense region such a survey tags: priced (at 37 ns a
    // byte read and written, 0.17 ms a probe: 4.4 MiB, whole MiBs), never
    // so little that the probes must spread wider (2 TiB: 32 MiB), all of
    // it unpriced.
    let d = layout::dense(
        &Options::new(DEFAULT_SKIP, DEFAULT_PUSH, DEFAULT_FLUSH, NONCE),
        4 << 30,
        512,
    );
    assert_eq!(layout::cut_dense(d, 4 << 30, Some(37.0), 170_000.0), 5 << 20);
    assert_eq!(layout::cut_dense(d, 2 << 40, Some(37.0), 170_000.0), 32 << 20);
    assert_eq!(
        layout::cut_dense(d, 4 << 30, Some(1e9), 1.0),
        1 << 20,
        "one MiB at least"
    );
    assert_eq!(layout::cut_dense(d, 4 << 30, None, 170_000.0), 32 << 20);
    // A 512 KiB cache held the samples at first; the survey's canary,
    // written after them, read back lost after the first MiB of flush,
    // so the flush ended at half again and the dense region (here
    // unpriced: all 32 MiB, as the read probes need it whole).
    let (r, _) = check_card("sim:demo,capacity=4G,real_capacity=1G,fake_mode=drop-zeros,write_cache=512K");
    assert_eq!((r.kind, r.usable_bytes), (Some(FakeKind::Cache), 1 << 30), "{r:?}");
    assert_eq!(r.flush_bytes, r.push_bytes, "{r:?}");
    assert!(
        r.limits.iter().any(|l| l.contains("read back lost after 1 MiB:")),
        "{r:?}"
    );
}

/// The survey's flush past the dense region is journalled chunk by chunk
/// as it is written. On this wrap card the last block lands in it (4 GiB
/// less a block, modulo 2121267200, is 50 MiB): the chunk there holds the
/// sample's tag when the flush reaches it, so it is left alone, and the
/// restore puts back every byte. (Journalled with the tag as its
/// original, that chunk was written back with the tag.)
#[test]
fn a_sample_wrapped_into_the_flush_is_put_back_as_it_was() {
    use crate::targets::{AlignedBuf, Request, run_all};
    let spec = "sim:demo,capacity=4G,real_capacity=2121267200,fake_mode=wrap";
    let mut card = SimTarget::new(spec, params_of(spec));
    let span = 80u64 << 20;
    let mut pattern = AlignedBuf::new(span as usize);
    for (i, b) in pattern.as_mut_slice().chunks_mut(4096).enumerate() {
        b.fill((i % 251) as u8 + 1);
    }
    run_all(&mut card, &[Request::write(0, span as u32, 0)], 1, &mut pattern).unwrap();
    let stage = Stage {
        options: Options::new(DEFAULT_SKIP, DEFAULT_PUSH, DEFAULT_FLUSH, NONCE),
        window: None,
        flush: true,
        canary: None,
        lap: 0,
        flush_budget_ns: u64::MAX,
    };
    let ranges = stage.plan(card.description()).unwrap();
    let mut p = crate::safety::PreservingTarget::in_memory(Box::new(&mut card as &mut dyn Target), ranges).unwrap();
    let never = || None;
    let mut cx = crate::measure::Cx {
        target: &mut p,
        progress: &(),
        cancelled: &never,
        budget_ns: u64::MAX,
    };
    let out = stage.run(&mut cx).unwrap();
    assert!(
        out.aliases.iter().any(|&(at, from)| at - from == 2121267200),
        "the wrap seen: {:?}",
        out.aliases
    );
    let (_, restored) = p.finish();
    restored.unwrap();
    let mut back = AlignedBuf::new(span as usize);
    run_all(&mut card, &[Request::read(0, span as u32, 0)], 1, &mut back).unwrap();
    let differ = (0..span / 4096).find(|&k| {
        let r = (k * 4096) as usize..(k * 4096 + 4096) as usize;
        back.as_slice()[r.clone()] != pattern.as_slice()[r]
    });
    assert_eq!(differ.map(|k| k * 4096), None, "the first block not put back");
}

/// A stage whose flush never let its canary go proves nothing by its
/// good blocks: they are left out, the narrowing stops there, and the
/// verdict keeps the window it had.
#[test]
fn good_reads_of_a_stage_that_could_not_empty_the_cache_are_not_evidence() {
    let block = |offset: u64, bad: bool| Checked {
        offset,
        len: BLOCK,
        good: if bad { 0 } else { BLOCK },
        bad: bad.then_some(Evidence::Zeros),
        before_push: true,
    };
    let size = 1u64 << 30;
    let stage = |window, checked, unflushed| StageResult {
        window,
        checked,
        aliases: Vec::new(),
        probe_errors: Vec::new(),
        probes: 0,
        bytes_written: 0,
        reads_only: false,
        canary: None,
        flushed: 0,
        unflushed,
        cut: None,
    };
    let survey = stage(None, vec![block(100 << 20, false), block(size - BLOCK, true)], false);
    let narrow = stage(
        Some((100 << 20, size - BLOCK)),
        vec![block(600 << 20, false), block(800 << 20, true)],
        true,
    );
    let stages = [survey, narrow];
    assert_eq!(next(&stages, size), Next::Done);
    let d = TargetDescription {
        size_bytes: size,
        ..SimTarget::from_spec("sim:demo").unwrap().description().clone()
    };
    let r = verdict(
        &stages,
        &d,
        &Options::new(DEFAULT_SKIP, DEFAULT_PUSH, DEFAULT_FLUSH, NONCE),
    );
    assert_eq!(r.usable_bytes, (100 << 20) + BLOCK, "not 600 MiB: {r:?}");
    assert_eq!(r.boundary, Some(((100 << 20) + BLOCK, 800 << 20)));
    assert!(r.limits.iter().any(|l| l.contains("still held")), "{:?}", r.limits);
}

#[test]
fn a_card_with_bad_blocks_is_damaged_and_they_are_named() {
    let (r, _) = check_card("sim:demo,capacity=1G,bad_ranges=512M+64M");
    assert_eq!(r.verdict, Verdict::Damaged, "{r:?}");
    assert!(!r.bad_regions.is_empty());
    for b in &r.bad_regions {
        assert!(b.offset >= 512 << 20 && b.offset + b.len <= (576 + 32) << 20, "{b:?}");
    }
    // Words, not the program's names for them.
    let mut text = String::new();
    <show::Presenter as crate::measure::registry::Registered>::text(&r, 0.0, &mut text);
    assert!(text.contains(": I/O errors") && !text.contains("IoError"), "{text}");
}

/// The safety argument of the module doc, on a card that wraps: every
/// stage journals its originals in its first batch, so writing them back
/// restores the real area byte for byte although samples land on the
/// dense region and on each other.
#[test]
fn a_journalled_stage_on_a_wrapping_card_puts_every_byte_back() {
    use crate::targets::{AlignedBuf, Request};
    let real: u64 = 40 << 20;
    let spec = format!("sim:demo,capacity=256M,real_capacity={real},fake_mode=wrap,au_size=1M");
    let mut t = SimTarget::new(&spec, params_of(&spec));
    let mut user = AlignedBuf::new(real as usize);
    let mut x = 99u64;
    for w in user.as_mut_slice().chunks_mut(8) {
        w.copy_from_slice(&crate::random::xorshift(&mut x).to_le_bytes());
    }
    t.run(&[Request::write(0, real as u32, 0)], 1, &mut user).unwrap();
    // A flush past the push: its extra blocks, written with what they
    // held, alias the samples and the dense region on this card.
    let o = Options::new(DEFAULT_SKIP, 4 << 20, 12 << 20, NONCE);
    let s = Stage {
        options: o,
        window: None,
        flush: true,
        canary: None,
        lap: 0,
        flush_budget_ns: u64::MAX,
    };
    let ranges = s.plan(t.description()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let reg = tempfile::tempdir().unwrap();
    let mut p = crate::safety::preserve::journalled(Box::new(t), &spec, ranges, dir.path(), reg.path());
    let never = || None;
    let mut cx = crate::measure::Cx {
        target: &mut p,
        progress: &(),
        cancelled: &never,
        budget_ns: crate::measure::budget_ns(None),
    };
    let out = s.run(&mut cx).unwrap();
    let d = p.description().clone();
    let r = verdict(&[out], &d, &o);
    assert_eq!((r.kind, r.usable_bytes), (Some(FakeKind::Wrap), real), "{r:?}");
    let (mut t, outcome) = p.finish();
    outcome.expect("restored and verified");
    let mut back = AlignedBuf::new(real as usize);
    t.run(&[Request::read(0, real as u32, 0)], 1, &mut back).unwrap();
    assert!(back.as_slice() == user.as_slice(), "the real area is as it was");
}
