//! Memory goal of the simulator (DESIGN.md: memory follows the data written): a 1 TiB card that has seen no writes
//! stays under 64 MiB of resident memory, and memory follows distinct data, not
//! capacity or repeated patterns. Run with `cargo run --release --example sim_memory`.

use flashlab::sim::{SimTarget, params_from_spec};
use flashlab::targets::{AlignedBuf, Request, Target};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The page-mapped card both cases use: 32 GiB of 4 KiB pages (8 Mi
/// pages), spare 0.1, timing only.
fn page_mapped_card() -> SimTarget {
    let spec = [
        ("capacity", "32G"),
        ("page_size", "4K"),
        ("au_size", "4M"),
        ("page_mapped", "true"),
        ("spare", "0.1"),
        ("keep_data", "false"),
    ];
    let o: Vec<(String, String)> = spec.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    SimTarget::new("sim:demo,page_mapped", params_from_spec("demo", &o).expect("card"))
}

/// Pages of the 32 GiB card.
const CARD_PAGES: u64 = 32 << 18;

/// Page-mapped flash tracks every page written: 2 GiB of 4 KiB pages, each
/// once, scattered over the card. Measured from after the requests are
/// made, so the figure is the map's own.
fn page_mapped() {
    let mut m = page_mapped_card();
    let pages = 2u64 << 18;
    let writes: Vec<Request> = (0..pages)
        .map(|i| Request::write((i * 2_654_435_761 % CARD_PAGES) * 4096, 4096, 0))
        .collect();
    let before = rss_kib();
    m.run(&writes, 1, &mut AlignedBuf::new(4096)).expect("writes");
    let grown = rss_kib().saturating_sub(before);
    // Scattered over the whole card, the map's chunks cover every page of
    // it: 3 B a page of the card (every slot number fits 24 bits).
    println!(
        "page-mapped 32 GiB card, spare 0.1, {} MiB of 4 KiB pages scattered over it: RSS +{} MiB (map bound: {} MiB \
         for the card's pages)",
        (pages * 4096) >> 20,
        grown / 1024,
        (CARD_PAGES * 3) >> 20,
    );
}

/// The same card filled in order, then a card's worth of uniform random
/// 4 KiB writes, so garbage collection runs on every block: the most the
/// card's state takes, in bytes a page.
fn page_mapped_full() {
    let mut m = page_mapped_card();
    let mut buf = AlignedBuf::new(1 << 20);
    // Requests in batches of 64 Ki, made before the first figure is read,
    // so the growth is the card's own.
    let batch = 1u64 << 16;
    let mut writes: Vec<Request> = (0..batch).map(|i| Request::write(i << 20, 1 << 20, 0)).collect();
    let before = rss_kib();
    for start in (0..CARD_PAGES / 256).step_by(batch as usize) {
        writes.clear();
        writes.extend((start..(start + batch).min(CARD_PAGES / 256)).map(|i| Request::write(i << 20, 1 << 20, 0)));
        m.run(&writes, 1, &mut buf).expect("fill");
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..CARD_PAGES / batch {
        writes.clear();
        writes.extend((0..batch).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Request::write(x % CARD_PAGES * 4096, 4096, 0)
        }));
        m.run(&writes, 1, &mut buf).expect("writes");
    }
    let grown = rss_kib().saturating_sub(before);
    let report = m.flash_report();
    println!(
        "the same card filled, then 32 GiB of random 4 KiB writes: {} collections, amplification {:.2}; \
         RSS +{} MiB, {:.2} bytes a page of the card",
        report.work.collections,
        report.amplification.unwrap_or(0.0),
        grown / 1024,
        (grown * 1024) as f64 / CARD_PAGES as f64
    );
}

/// Each page-mapped case in a process of its own, so neither reuses
/// memory the other freed.
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("page-mapped") => return page_mapped(),
        Some("page-mapped-full") => return page_mapped_full(),
        _ => {}
    }
    for case in ["page-mapped", "page-mapped-full"] {
        let out = std::process::Command::new(std::env::current_exe().expect("this example"))
            .arg(case)
            .output()
            .expect("run a case");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        assert!(out.status.success(), "{case}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let before = rss_kib();
    let o = vec![("capacity".to_string(), "1T".to_string())];
    let mut t = SimTarget::new("sim:demo,capacity=1T", params_from_spec("demo", &o).expect("card"));
    let mut buf = AlignedBuf::new(1 << 20);
    // Reads all over the card: nothing is allocated for never-written data.
    let reads: Vec<Request> = (0..1024u64).map(|i| Request::read(i << 30, 1 << 20, 0)).collect();
    t.run(&reads, 1, &mut buf).expect("reads");
    println!(
        "1 TiB card, 1 GiB read, no writes: RSS {} MiB (was {} MiB), data {} B",
        rss_kib() / 1024,
        before / 1024,
        t.data_bytes()
    );
    // The same non-uniform 1 MiB pattern written 4096 times (4 GiB of writes).
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i * 131 % 251) as u8;
    }
    let writes: Vec<Request> = (0..4096u64).map(|i| Request::write(i << 28, 1 << 20, 0)).collect();
    t.run(&writes, 1, &mut buf).expect("writes");
    println!(
        "after 4 GiB of one repeated 1 MiB pattern: RSS {} MiB, distinct data {} KiB",
        rss_kib() / 1024,
        t.data_bytes() >> 10
    );
    // 256 MiB of distinct data: memory grows by about that much.
    let mut distinct = 0u64;
    for i in 0..256u64 {
        for (j, w) in buf.as_mut_slice().chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&((i << 32) | j as u64).to_le_bytes());
        }
        t.run(&[Request::write((i << 30) + (512 << 20), 1 << 20, 0)], 1, &mut buf)
            .expect("write");
        distinct += 1 << 20;
    }
    println!(
        "after {} MiB of distinct data: RSS {} MiB, data {} MiB",
        distinct >> 20,
        rss_kib() / 1024,
        t.data_bytes() >> 20
    );
}
