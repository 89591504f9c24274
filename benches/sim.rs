//! Simulator speed goals (DESIGN.md: memory follows the data written): 5 M timing-only 4 KiB requests per second on
//! one core, 1 GB/s of data when data is kept, a 64 GiB card written end to end
//! in under 2 s. Run with `cargo bench --bench sim`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flashlab::sim::{SimTarget, params_from_spec};
use flashlab::targets::{AlignedBuf, Request, Target};

fn card(overrides: &[(&str, &str)]) -> SimTarget {
    let o: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    SimTarget::new("sim:demo", params_from_spec("demo", &o).expect("demo card"))
}

fn timing_only(c: &mut Criterion) {
    const N: u64 = 100_000;
    let mut g = c.benchmark_group("timing-only");
    g.throughput(Throughput::Elements(N));
    let reqs: Vec<Request> = (0..N)
        .map(|i| Request::write((i * 2_654_435_761 % 7_000_000) * 4096, 4096, 0))
        .collect();
    let mut buf = AlignedBuf::new(4096);
    let mut t = card(&[("keep_data", "false")]);
    g.bench_function("4k random writes", |b| b.iter(|| t.run(&reqs, 1, &mut buf).unwrap()));
    // Page-mapped with spare: every page tracked, and collected once the
    // spare runs out (after the first 1 GiB of the run's writes).
    let mapped: Vec<Request> = (0..N)
        .map(|i| Request::write((i * 2_654_435_761 % 262_144) * 4096, 4096, 0))
        .collect();
    let mut m = card(&[
        ("keep_data", "false"),
        ("capacity", "1G"),
        ("page_size", "4K"),
        ("page_mapped", "true"),
        ("spare", "0.1"),
    ]);
    g.bench_function("4k random writes, page-mapped, spare 0.1", |b| {
        b.iter(|| m.run(&mapped, 1, &mut buf).unwrap())
    });
    let reads: Vec<Request> = (0..N).map(|i| Request::read(i * 4096, 4096, 0)).collect();
    g.bench_function("4k sequential reads", |b| {
        b.iter(|| t.run(&reads, 1, &mut buf).unwrap())
    });
    g.finish();
}

fn with_data(c: &mut Criterion) {
    const LEN: usize = 1 << 20;
    let mut g = c.benchmark_group("data kept");
    g.throughput(Throughput::Bytes(64 * LEN as u64));
    let mut buf = AlignedBuf::new(LEN);
    // Distinct, non-uniform data in every request: no fill or sharing shortcut.
    let mut t = card(&[]);
    let mut round = 0u64;
    g.bench_function("1 MiB writes, distinct data", |b| {
        b.iter(|| {
            round += 1;
            for (i, w) in buf.as_mut_slice().chunks_exact_mut(8).enumerate() {
                w.copy_from_slice(&(i as u64 ^ round.rotate_left(17)).to_le_bytes());
            }
            let reqs: Vec<Request> = (0..64u64)
                .map(|i| Request::write(i * LEN as u64, LEN as u32, 0))
                .collect();
            t.run(&reqs, 1, &mut buf).unwrap()
        })
    });
    let reads: Vec<Request> = (0..64u64)
        .map(|i| Request::read(i * LEN as u64, LEN as u32, 0))
        .collect();
    g.bench_function("1 MiB reads back", |b| b.iter(|| t.run(&reads, 1, &mut buf).unwrap()));
    g.finish();
}

fn whole_card(c: &mut Criterion) {
    let mut g = c.benchmark_group("whole card");
    g.sample_size(10);
    g.bench_function("64 GiB sequential write, 1 MiB requests, timing only", |b| {
        b.iter(|| {
            let mut t = card(&[("capacity", "64G"), ("keep_data", "false")]);
            let mut buf = AlignedBuf::new(1 << 20);
            let reqs: Vec<Request> = (0..65536u64).map(|i| Request::write(i << 20, 1 << 20, 0)).collect();
            t.run(&reqs, 1, &mut buf).unwrap();
            t.device_time_ns()
        })
    });
    g.bench_function("64 GiB sequential write, 128 KiB requests, timing only", |b| {
        b.iter(|| {
            let mut t = card(&[("capacity", "64G"), ("keep_data", "false")]);
            let mut buf = AlignedBuf::new(128 << 10);
            let reqs: Vec<Request> = (0..524_288u64).map(|i| Request::write(i << 17, 128 << 10, 0)).collect();
            t.run(&reqs, 1, &mut buf).unwrap();
            t.device_time_ns()
        })
    });
    g.finish();
}

criterion_group!(benches, timing_only, with_data, whole_card);
criterion_main!(benches);
