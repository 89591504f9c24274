//! FreeBSD PR arm/155214 (docs/SOURCES.md): `dd bs=1m count=10` read and write on two
//! SanDisk cards behind the AT91RM9200 at91_mci, and the interrupts taken from
//! boot to a shell.

use super::{Builder, card, csv, num, throughput};
use crate::targets::Request;

const TABLE: &str = include_str!("../../../calibration/at91_mci.csv");
const INTERRUPTS: &str = include_str!("../../../calibration/at91_mci_interrupts.csv");

/// The boot's reads, as the request-size mix that reproduces the published
/// interrupt counts: FreeBSD UFS reads whole 16 KiB blocks, with a few 2 KiB
/// fragment reads (tail ends of small files). 1319 block reads and 46 fragment
/// reads are 42 392 sectors; at one interrupt per sector (single-block driver)
/// that is ~42 384, at one per command of up to 64 blocks it is 1365.
const BOOT_MIX: &[(u32, u64)] = &[(16 << 10, 1319), (2 << 10, 46)];

pub(super) fn run(b: &mut Builder) {
    for row in csv(TABLE) {
        let (erase_blocks, clock, width, per_cmd) = (row[0], row[2], row[3], row[4]);
        let profile = if erase_blocks == "32" {
            "sandisk-512mb"
        } else {
            "sandisk-2gb"
        };
        let spec = format!("sim:{profile},clock_hz={clock},bus_width={width},max_blocks_per_cmd={per_cmd}");
        let label = format!(
            "{erase_blocks}-block erase, {} MHz {width}-bit, {per_cmd}-block",
            num(clock) / 1e6
        );
        // dd writes 10 x 1 MiB from the start of the slice; a fresh card each
        // (the seed reports the median of runs right after a reboot).
        let dd = |write: bool| {
            let reqs: Vec<Request> = (0..10u64)
                .map(|i| {
                    let off = (4 << 20) + (i << 20);
                    if write {
                        Request::write(off, 1 << 20, 0)
                    } else {
                        Request::read(off, 1 << 20, 0)
                    }
                })
                .collect();
            throughput(&mut card(&spec), &reqs, 1)
        };
        b.row(&label, "dd read", "B/s", num(row[5]), dd(false));
        b.row(&label, "dd write", "B/s", num(row[6]), dd(true));
    }
    let mut counts = Vec::new();
    for row in csv(INTERRUPTS) {
        let per_cmd = row[1];
        let mut t = card(&format!("sim:sandisk-2gb,max_blocks_per_cmd={per_cmd}"));
        let mut off = 64u64 << 20;
        let reqs: Vec<Request> = BOOT_MIX
            .iter()
            .flat_map(|&(len, n)| std::iter::repeat_n(len, n as usize))
            .map(|len| {
                let r = Request::read(off, len, 0);
                off += 1 << 20;
                r
            })
            .collect();
        throughput(&mut t, &reqs, 1);
        let label = format!("{} driver, {per_cmd}-block, boot reads", row[0]);
        b.row(&label, "interrupts", "count", num(row[2]), t.counters.interrupts as f64);
        counts.push((num(row[2]), t.counters.interrupts as f64));
    }
    if let [(p1, s1), (p64, s64)] = counts[..] {
        b.row("single vs multi-block", "interrupt ratio", "x", p1 / p64, s1 / s64);
    }
    b.note(
        "Boot reads modelled as 1319 UFS 16 KiB block reads plus 46 2 KiB fragment reads: 31 sectors per \
         multi-block command on average, which is the published 31x fall in interrupts. The interrupts-per-second \
         column depends on the boot's CPU time and is not a device figure, so it is not compared.",
    );
}
