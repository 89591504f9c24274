//! Wang, MMC software queue (docs/SOURCES.md): fio 4K direct I/O, iodepth 20,
//! 20 jobs, on an HS400 eMMC, without and with the software queue.

use super::{Builder, Rng, card, csv, num, throughput};
use crate::targets::Request;

const TABLE: &str = include_str!("../../../calibration/mmc_hsq.csv");

/// Requests per run: enough for the pipeline to reach its steady state.
const REQUESTS: u64 = 20_000;
/// fio --size=1G.
const SPAN: u64 = 1 << 30;
/// fio's 20 jobs x iodepth 20 requests outstanding; the host caps what it takes.
const OUTSTANDING: usize = 400;

pub(super) fn run(b: &mut Builder) {
    for row in csv(TABLE) {
        let workload = row[0];
        let write = workload.ends_with("write");
        let random = workload.starts_with("rand");
        let reqs: Vec<Request> = {
            let mut rng = Rng::new(1);
            (0..REQUESTS)
                .map(|i| {
                    let off = if random {
                        rng.below(SPAN / 4096) * 4096
                    } else {
                        (i * 4096) % SPAN
                    };
                    if write {
                        Request::write(off, 4096, 0)
                    } else {
                        Request::read(off, 4096, 0)
                    }
                })
                .collect()
        };
        for (host, published) in [("sdhci-hs400", row[1]), ("sdhci-hs400-hsq", row[2])] {
            let mut t = card(&format!("sim:emmc-hs400,host={host}"));
            let bps = throughput(&mut t, &reqs, OUTSTANDING);
            let label = format!(
                "{workload}, {}",
                if host.ends_with("hsq") {
                    "with hsq"
                } else {
                    "without hsq"
                }
            );
            b.row(label, "fio 4K", "MiB/s", num(published), bps / (1 << 20) as f64);
        }
    }
    b.note(
        "fio's 20 jobs are modelled as one stream the host queue draws from (sequential jobs read the same \
         offsets, so the card sees a sequential pattern); the software queue is queue_depth 32 with 2 in flight, \
         which lets the host prepare and complete requests while the card works.",
    );
}
