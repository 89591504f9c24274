//! What flashbench's manual open-au sweep costs on sim:kingston-sa04g, for
//! comparison with `flashlab open-au`'s automatic one: the user runs
//! `--open-au --open-au-nr=N` (linear and `--random`) for N = 1..=5, every
//! chunk size from 4 MiB down to 16 KiB, each to the end.
//! Run with `cargo run --release --example flashbench_cost`.

use flashlab::random::chunk_sizes;
use flashlab::sim::SimTarget;
use flashlab::sim::profiles::build;
use flashlab::sim::reproduce::flashbench::open_au;
use flashlab::targets::Target;

fn main() {
    let mut total = 0.0;
    for random in [false, true] {
        for n in 1..=5 {
            let mut t = SimTarget::new("sim:kingston-sa04g", build("kingston-sa04g").expect("profile"));
            open_au(&mut t, 4 << 20, &chunk_sizes(4 << 20, 16 << 10), n, random);
            let s = t.device_time_ns() as f64 / 1e9;
            total += s;
            println!(
                "{} N={n}: {s:.0} device-seconds",
                if random { "random" } else { "linear" }
            );
        }
    }
    println!(
        "flashbench manual sweep, N = 1..=5 both ways: {total:.0} device-seconds ({:.1} minutes)",
        total / 60.0
    );
}
