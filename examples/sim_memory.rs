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

/// Page-mapped flash with spare tracks every page written (its map and
/// each block's slots), timing only: 2 GiB of 4 KiB pages, each once. Run
/// first, in a fresh process, and measured from after the requests are
/// made, so the figure is the map's own.
fn page_mapped() {
    let spec = [
        ("capacity", "32G"),
        ("page_size", "4K"),
        ("au_size", "4M"),
        ("page_mapped", "true"),
        ("spare", "0.1"),
        ("keep_data", "false"),
    ];
    let o: Vec<(String, String)> = spec.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut m = SimTarget::new("sim:demo,page_mapped", params_from_spec("demo", &o).expect("card"));
    let pages = 2u64 << 18;
    let writes: Vec<Request> = (0..pages)
        .map(|i| Request::write((i * 2_654_435_761 % (32 << 18)) * 4096, 4096, 0))
        .collect();
    let before = rss_kib();
    m.run(&writes, 1, &mut AlignedBuf::new(4096)).expect("writes");
    let grown = rss_kib().saturating_sub(before);
    // Scattered over the whole card, the map's chunks cover every page of
    // it: 4 B a page of the card, then 4 B a page written.
    println!(
        "page-mapped 32 GiB card, spare 0.1, {} MiB of 4 KiB pages scattered over it: RSS +{} MiB (map bound: {} MiB \
         for the card's pages, {} MiB for those written)",
        (pages * 4096) >> 20,
        grown / 1024,
        ((32u64 << 18) * 4) >> 20,
        (pages * 4) >> 20
    );
}

fn main() {
    page_mapped();
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
