//! The simulated card as a target: data kept, time virtual, seeded
//! noise, fakes, caches and the host's commands.

use super::*;

fn sim(spec: &str) -> SimTarget {
    SimTarget::from_spec(spec).unwrap()
}

#[test]
fn reads_return_what_was_written_and_time_is_virtual() {
    let mut t = sim("sim:demo");
    let mut buf = AlignedBuf::new(8192);
    buf.as_mut_slice()[..4096].fill(0x5a);
    buf.as_mut_slice()[4096..]
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = i as u8);
    let c = t.run(&[Request::write(1 << 20, 8192, 0)], 1, &mut buf).unwrap();
    assert!(c[0].duration_ns > 0 && c[0].errno.is_none());
    let mut back = AlignedBuf::new(8192);
    t.run(&[Request::read(1 << 20, 8192, 0)], 1, &mut back).unwrap();
    assert_eq!(back.as_slice(), buf.as_slice());
    assert_eq!(t.counters.bytes_written, 8192);
    assert_eq!(t.counters.requests, 2);
    assert!(t.device_time_ns() > 0);
}

/// A 1 KiB read across a codeword's edge moves two codewords where its
/// length needs one: exactly `codeword_read_ns` more than the same read
/// inside one; a whole-codeword read, and any read without codewords,
/// pays nothing.
#[test]
fn a_read_across_a_codeword_moves_one_more() {
    let read = |spec: &str, off: u64, len: u32| {
        let mut t = sim(spec);
        let mut buf = AlignedBuf::new(len as usize);
        t.run(&[Request::read(off, len, 0)], 1, &mut buf).unwrap()[0].duration_ns
    };
    let cw = "sim:demo,codeword_size=1k,codeword_read_ns=13000";
    let page = 1 << 20;
    assert_eq!(read(cw, page + 1536, 1024), read(cw, page + 1024, 1024) + 13000);
    assert_eq!(read(cw, page + 2048, 2048), read("sim:demo", page + 2048, 2048));
    assert_eq!(read(cw, page + 512, 1024), read(cw, page + 1024, 1024) + 13000);
    assert_eq!(read("sim:demo", page + 1536, 1024), read("sim:demo", page + 1024, 1024));
    assert!(SimTarget::from_spec("sim:demo,codeword_size=3k").is_err());
    assert!(SimTarget::from_spec("sim:demo,codeword_read_ns=13000").is_err());
}

#[test]
fn deterministic_for_a_seed() {
    let run = |spec: &str| {
        let mut t = sim(spec);
        let mut buf = AlignedBuf::new(65536);
        let reqs: Vec<_> = (0..200u64)
            .map(|i| Request::write((i * 7919 % 4000) * 65536, 65536, 0))
            .collect();
        let c = t.run(&reqs, 4, &mut buf).unwrap();
        (c.iter().map(|c| c.duration_ns).collect::<Vec<_>>(), t.counters)
    };
    assert_eq!(run("sim:demo,jitter=0.1,seed=7"), run("sim:demo,jitter=0.1,seed=7"));
    assert_ne!(run("sim:demo,jitter=0.1,seed=7").0, run("sim:demo,jitter=0.1,seed=8").0);
}

#[test]
fn fake_capacity_wraps_and_bad_ranges_fail() {
    let mut t = sim("sim:demo,capacity=64M,real_capacity=16M,bad_ranges=32M+1M,au_size=1M");
    let mut buf = AlignedBuf::new(4096);
    buf.as_mut_slice().fill(0xab);
    t.run(&[Request::write(16 << 20, 4096, 0)], 1, &mut buf).unwrap();
    let mut back = AlignedBuf::new(4096);
    t.run(&[Request::read(0, 4096, 0)], 1, &mut back).unwrap();
    assert!(back.as_slice().iter().all(|&b| b == 0xab), "16 MiB wrapped onto 0");
    let c = t
        .run(
            &[Request::read(32 << 20, 4096, 0), Request::read(31 << 20, 4096, 0)],
            1,
            &mut back,
        )
        .unwrap();
    assert_eq!(c[0].errno, Some(libc::EIO));
    assert_eq!(c[1].errno, None);
}

/// Write a tagged 4 KiB block at each offset in turn, then read each back:
/// which still hold their own tag.
fn kept(t: &mut SimTarget, offsets: &[u64]) -> Vec<bool> {
    let mut buf = AlignedBuf::new(4096);
    for &o in offsets {
        buf.as_mut_slice().fill((o >> 20) as u8 ^ 0x5a);
        t.run(&[Request::write(o, 4096, 0)], 1, &mut buf).unwrap();
    }
    offsets
        .iter()
        .map(|&o| {
            t.run(&[Request::read(o, 4096, 0)], 1, &mut buf).unwrap();
            buf.as_slice().iter().all(|&b| b == (o >> 20) as u8 ^ 0x5a)
        })
        .collect()
}

#[test]
fn fake_kinds_lose_what_lies_past_the_real_capacity() {
    let at = [1 << 20, 20 << 20, 40 << 20];
    for mode in ["drop-zeros", "drop-stale"] {
        let mut t = sim(&format!(
            "sim:demo,capacity=64M,real_capacity=24M,fake_mode={mode},au_size=1M"
        ));
        assert_eq!(kept(&mut t, &at), [true, true, false], "{mode}");
        let mut back = AlignedBuf::new(4096);
        t.run(&[Request::read(40 << 20, 4096, 0)], 1, &mut back).unwrap();
        let zeros = back.as_slice().iter().all(|&b| b == 0);
        assert_eq!(
            zeros,
            mode == "drop-zeros",
            "{mode}: lost blocks read as zeros or old data"
        );
        // Nothing written past the real capacity landed below it.
        assert_eq!(kept(&mut t, &[16 << 20]), [true]);
    }
    // Wrap modulo a size that is not a power of two: 40 MiB lands on 40 - 24.
    let mut t = sim("sim:demo,capacity=64M,real_capacity=24M,au_size=1M");
    let mut buf = AlignedBuf::new(4096);
    buf.as_mut_slice().fill(0x77);
    t.run(&[Request::write(40 << 20, 4096, 0)], 1, &mut buf).unwrap();
    t.run(&[Request::read(16 << 20, 4096, 0)], 1, &mut buf).unwrap();
    assert!(buf.as_slice().iter().all(|&b| b == 0x77));
}

#[test]
fn a_write_cache_hides_a_fake_until_it_is_pushed_out() {
    let spec = "sim:demo,capacity=64M,real_capacity=24M,fake_mode=drop-zeros,write_cache=64K,au_size=1M";
    let mut t = sim(spec);
    // Written and read at once: the cache answers, the fake passes.
    assert_eq!(kept(&mut t, &[40 << 20]), [true]);
    // 64 KiB more writes push it out: the loss shows.
    let mut buf = AlignedBuf::new(4096);
    for k in 0..16u64 {
        t.run(&[Request::write((2 << 20) + k * 4096, 4096, 0)], 1, &mut buf)
            .unwrap();
    }
    let mut back = AlignedBuf::new(4096);
    t.run(&[Request::read(40 << 20, 4096, 0)], 1, &mut back).unwrap();
    assert!(
        back.as_slice().iter().all(|&b| b == 0),
        "pushed out of the cache, the block is lost"
    );
}

#[test]
fn single_block_host_pays_per_block_interrupts_and_commands() {
    let mut single = sim("sim:sandisk-2gb");
    let mut multi = sim("sim:sandisk-2gb,max_blocks_per_cmd=64");
    let mut buf = AlignedBuf::new(32768);
    let s = single.run(&[Request::read(1 << 20, 32768, 0)], 1, &mut buf).unwrap();
    let m = multi.run(&[Request::read(1 << 20, 32768, 0)], 1, &mut buf).unwrap();
    assert_eq!(single.counters.commands, 64);
    assert_eq!(single.counters.interrupts, 64);
    assert_eq!(multi.counters.commands, 1);
    assert!(
        s[0].duration_ns > 2 * m[0].duration_ns,
        "{} vs {}",
        s[0].duration_ns,
        m[0].duration_ns
    );
}

#[test]
fn timing_only_cards_keep_no_data() {
    let mut t = sim("sim:demo,keep_data=false,erased=ones");
    let mut buf = AlignedBuf::new(1 << 20);
    buf.as_mut_slice()
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = i as u8);
    let reqs: Vec<_> = (0..64u64).map(|i| Request::write(i << 20, 1 << 20, 0)).collect();
    t.run(&reqs, 1, &mut buf).unwrap();
    assert_eq!(t.data_bytes(), 0);
    t.run(&[Request::read(0, 4096, 0)], 1, &mut buf).unwrap();
    assert!(buf.as_slice()[..4096].iter().all(|&b| b == 0xff));
}

#[test]
fn open_au_collapse_shows_in_throughput() {
    // flashbench --open-au on kingston-sa04g: 3 AUs interleaved stay fast, 4 collapse.
    let rate = |n: u64| {
        let mut t = sim("sim:kingston-sa04g");
        let chunk = 64u64 << 10;
        let mut buf = AlignedBuf::new(chunk as usize);
        let reqs: Vec<_> = (0..(4u64 << 20) / chunk)
            .flat_map(|c| (0..n).map(move |a| Request::write((16 + 2 * a) * (4 << 20) + c * chunk, chunk as u32, 0)))
            .collect();
        let done = t.run(&reqs, 1, &mut buf).unwrap();
        let ns: u64 = done.iter().map(|c| c.duration_ns).sum();
        (reqs.len() as f64 * chunk as f64) / (ns as f64 / 1e9)
    };
    let (three, four) = (rate(3), rate(4));
    assert!(three > 4.0 * four, "3 open AUs {three:.0} B/s vs 4 {four:.0} B/s");
}
