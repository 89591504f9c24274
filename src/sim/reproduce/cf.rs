//! Belevich, CompactFlash (docs/SOURCES.md; NetBSD wd/ata_wdc, 2002-2004): CompactFlash in PIO mode, the
//! per-sector timeline of single- and multi-sector commands, and iozone 4K runs
//! with the stock (one command per sector) and patched (READ/WRITE MULTIPLE)
//! driver.

use super::{Builder, Rng, card, csv, latencies, num};
use crate::targets::{Request, Target};

const TIMELINE: &str = include_str!("../../../calibration/cf_ata_timeline.csv");
const IOZONE: &str = include_str!("../../../calibration/cf_iozone.csv");

/// The card the timeline was measured on reads ~900 KB/s single-sector, which is
/// the SimpleTech/OEM card of the iozone table.
const TIMELINE_CARD: &str = "sim:cf-simpletech-oem,host=netbsd-ata-pio";
/// iozone -s 16m -r 4k.
const FILE: u64 = 16 << 20;
const RECORD: u32 = 4096;
/// Where the file sits on the card.
const FILE_AT: u64 = 1 << 20;

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

fn timeline(b: &mut Builder) {
    let published = |mode: &str, step: &str| {
        csv(TIMELINE)
            .iter()
            .find(|r| r[0] == mode && r[1] == step)
            .map(|r| num(r[2]))
            .unwrap_or_else(|| panic!("timeline row {mode}/{step}"))
    };
    // dd bs=8192: single-sector commands, sequential.
    let mut t = card(TIMELINE_CARD);
    let reqs: Vec<Request> = (0..64u64).map(|i| Request::read(i * 8192, 8192, 0)).collect();
    let lat = latencies(&mut t, &reqs, 1);
    let first_sector = {
        let mut fresh = card(TIMELINE_CARD);
        latencies(&mut fresh, &[Request::read(0, 512, 0)], 1)[0]
    };
    b.row(
        "single-sector read",
        "first sector (command to data)",
        "us",
        published("single_sector_read", "first command to interrupt")
            + published("single_sector_read", "PIO fetch of one 512-byte sector"),
        first_sector as f64 / 1e3,
    );
    b.row(
        "single-sector read",
        "total per sector",
        "us",
        published("single_sector_read", "total per sector"),
        mean(&lat[1..]) / 16.0 / 1e3,
    );
    // A driver issuing 32-sector READ commands, still one interrupt per sector.
    let multi = format!("{TIMELINE_CARD},max_blocks_per_cmd=32");
    let mut t = card(&multi);
    let l32 = latencies(&mut t, &[Request::read(0, 16384, 0), Request::read(16384, 16384, 0)], 1)[1];
    let mut t = card(&multi);
    let l1 = latencies(&mut t, &[Request::read(0, 16384, 0), Request::read(16384, 512, 0)], 1)[1];
    b.row(
        "multi-sector read (32 sectors)",
        "total per sector",
        "us",
        published("multi_sector_read", "total per sector"),
        (l32 - l1) as f64 / 31.0 / 1e3,
    );
    let mut t = card(TIMELINE_CARD);
    let reqs: Vec<Request> = (0..256u64)
        .map(|i| Request::write((4 << 20) + i * 512, 512, 0))
        .collect();
    let lat = latencies(&mut t, &reqs, 1);
    b.row(
        "single-sector write",
        "total per sector",
        "us",
        published("single_sector_write", "total per sector"),
        mean(&lat[1..]) / 1e3,
    );
}

/// One iozone phase's request list over the file. A rewritten record is
/// read from the card before it is written. The published table shows it
/// in all eight of its rows: the rewrite's time per record is the write's
/// plus the read's, within 3% (Sandisk Ultra II stock: 1 / (1/1131 +
/// 1/1710) = 681 KB/s against 677 published; SimpleTech/OEM stock 174.5
/// against 175; Sandisk Ultra II multi-sector 2651 against 2573). The run
/// accesses the file through mmap() (`-B`, as iozone(1) (docs/SOURCES.md)
/// tells its options), where changing a page that is not in memory faults
/// it in from the card first, while the first write fills the pages of a
/// new file. Why the pages were no longer cached after the write phase
/// (write and rewrite are one iozone test; `-U` remounts before each
/// test) the post does not say.
fn phase(metric: &str, rng: &mut Rng) -> Vec<Request> {
    let n = FILE / u64::from(RECORD);
    let order: Vec<u64> = match metric {
        "backward_read" => (0..n).rev().collect(),
        // iozone -j default stride: 17 records.
        "stride_read" => (0..n).map(|i| (i * 17) % n).collect(),
        "random_read" | "random_write" => {
            let mut v: Vec<u64> = (0..n).collect();
            for i in (1..v.len()).rev() {
                v.swap(i, rng.below(i as u64 + 1) as usize);
            }
            v
        }
        _ => (0..n).collect(),
    };
    let write = matches!(metric, "write" | "rewrite" | "random_write");
    let read_first = metric == "rewrite";
    order
        .into_iter()
        .flat_map(|i| {
            let off = FILE_AT + i * u64::from(RECORD);
            let read = (!write || read_first).then(|| Request::read(off, RECORD, 0));
            read.into_iter().chain(write.then(|| Request::write(off, RECORD, 0)))
        })
        .collect()
}

fn iozone(b: &mut Builder) {
    let text = IOZONE;
    let header: Vec<&str> = text
        .lines()
        .find(|l| !l.starts_with('#'))
        .map(|l| l.split(',').collect())
        .unwrap_or_default();
    for row in csv(text) {
        let profile = match row[0] {
            "Sandisk Ultra II" => "cf-sandisk-ultra2",
            "SimpleTech/OEM" => "cf-simpletech-oem",
            _ => continue,
        };
        let host = if row[1] == "was" {
            "netbsd-ata-pio"
        } else {
            "netbsd-ata-pio-multi"
        };
        // iozone runs its phases in order on one file: a card with history.
        let mut t = card(&format!("sim:{profile},host={host}"));
        let mut rng = Rng::new(2);
        for (metric, cell) in header.iter().zip(&row).skip(2) {
            if *metric == "record_rewrite" {
                continue;
            }
            let reqs = phase(metric, &mut rng);
            // iozone's rate is the file over the phase's time, reads before
            // a rewrite included.
            let start = t.device_time_ns();
            latencies(&mut t, &reqs, 1);
            let bps = FILE as f64 / ((t.device_time_ns() - start) as f64 / 1e9);
            let label = format!("{}, {}", row[0], if row[1] == "was" { "stock" } else { "multi-sector" });
            b.row(label, &format!("iozone {metric}"), "KB/s", num(cell), bps / 1024.0);
        }
    }
    b.note(
        "iozone is modelled as its 4 KiB record stream on the card, a rewritten record read from the card \
         before its write (every published row has the rewrite's time as the write's plus the read's; -B \
         maps the file); the file system's own metadata writes (-o makes every write synchronous) are not \
         modelled. record_rewrite (250-1600 MB/s) is the page cache, not the card, and is not compared. Only \
         the two CF cards with profiles are compared.",
    );
}

pub(super) fn run(b: &mut Builder) {
    timeline(b);
    iozone(b);
}
