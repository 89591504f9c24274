//! What the measured geometry means for how to use the card: partition
//! alignment, filesystem layout, how many files to write at once. Pure
//! interpretation of results `probe` already has, so it is the same for a
//! real card and a simulated one.

use serde::{Deserialize, Serialize};

use super::align::AlignResult;
use super::claim::{self, Claim};
use super::fat::FatResult;
use super::open_au::OpenAuResult;
use crate::identify::DeviceInfo;
use crate::units::Iec;

mod setup;

/// Bradford, Flashbenching: "Any card which can handle 5 or more open-au is quite good."
const GOOD_OPEN_AUS: u64 = 5;
/// Bradford, Flashbenching: "For good performance with a file system, you want this [random
/// open-au] test to show at least 3 open-au."
const ENOUGH_RANDOM_OPEN_AUS: u64 = 3;
/// A1's floor (SD spec (docs/SOURCES.md), 4.16): 500 random 4 KiB write
/// IOPS.
const A1_WRITE_IOPS: f64 = 500.0;
/// The filesystem block the layout advice counts in (ext4's default).
const FS_BLOCK: u64 = 4096;
/// f2fs's segment: 2 MiB (f2fs documentation, "Design": a segment is 512
/// 4 KiB blocks; `mkfs.f2fs -s` counts segments per section).
const F2FS_SEGMENT: u64 = 2 << 20;

/// One piece of advice: what was seen, what to do, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// Stable identifier for scripts (`align_partitions`, `few_open_aus`, ...).
    pub topic: String,
    pub text: String,
    /// A command to run as it stands, shown on a line of its own so it
    /// copies in one piece (a wrapped sfdisk line had split mid-quote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

fn say(topic: &'static str, text: String) -> Advice {
    Advice {
        topic: topic.into(),
        text,
        command: None,
    }
}

/// Everything probe measured that advice reads.
#[derive(Default, Clone, Copy)]
pub struct Measured<'a> {
    pub info: Option<&'a DeviceInfo>,
    pub align: Option<&'a AlignResult>,
    pub au: Option<&'a super::au::AuResult>,
    pub page: Option<&'a super::page::PageResult>,
    pub open_au: Option<&'a OpenAuResult>,
    pub fat: Option<&'a FatResult>,
    pub capacity: Option<&'a super::capacity::CapacityResult>,
    pub bench: Option<&'a super::bench::BenchResult>,
    /// A journal an unfinished run left for this device.
    pub pending_journal: Option<&'a str>,
}

/// Verdicts that were measured on something that may be flash and came
/// out below the confidence advice needs.
fn unsure_verdicts(m: &Measured) -> Vec<&'static str> {
    let mut out = Vec::new();
    if let Some(a) = m.align.filter(|a| a.not_flash.is_none()) {
        if !sure(super::best_erase(a, m.au).1) {
            out.push("erase block");
        }
        let (p, c) = super::best_page(a, m.page);
        if p.is_some() && !sure(c) {
            out.push("page");
        }
    }
    if let Some(o) = m.open_au.filter(|o| o.not_flash.is_none()) {
        if o.linear
            .as_ref()
            .is_some_and(|s| s.claim.claimed && !sure(s.confidence))
        {
            out.push("open AUs in order");
        }
        if o.random
            .as_ref()
            .is_some_and(|s| s.claim.claimed && !sure(s.confidence))
        {
            out.push("open AUs at random");
        }
    }
    if m.fat
        .is_some_and(|f| f.not_flash.is_none() && f.claim.claimed && !sure(f.confidence))
    {
        out.push("FAT area");
    }
    out
}

/// Verdicts a step refused on something that may be flash (its budget or
/// its region ended it first), each with why: not noise, and no advice.
fn refused_verdicts(m: &Measured) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |name: &str, c: &Claim| {
        if let Some(why) = c.why() {
            out.push(format!("{name} ({})", claim::short(why)));
        }
    };
    if let Some(o) = m.open_au.filter(|o| o.not_flash.is_none()) {
        for (name, s) in [("open AUs in order", &o.linear), ("open AUs at random", &o.random)] {
            if let Some(s) = s {
                add(name, &s.claim);
            }
        }
    }
    if let Some(f) = m.fat.filter(|f| f.not_flash.is_none()) {
        add("FAT area", &f.claim);
    }
    out
}

/// Whether a verdict is confident enough to draw advice from.
fn sure(p: f64) -> bool {
    p >= super::CONFIDENT
}

/// Advice from whatever results exist, confident verdicts only (an unsure
/// erase block, limit or area gives no advice); a test that did not run adds
/// nothing.
pub fn advise(m: &Measured) -> Vec<Advice> {
    let Measured {
        info,
        align,
        au,
        page,
        open_au,
        fat,
        capacity,
        bench,
        pending_journal: _,
    } = *m;
    let mut out = cautions(m);
    out.extend(capacity.and_then(capacity_warning));
    out.extend(kernel_erase_guess(info));
    out.extend(bench.and_then(random_writes));
    // The erase size and page as probe states them (reads and writes).
    let erase = align
        .map(|a| super::best_erase(a, au))
        .filter(|(_, c)| sure(*c))
        .and_then(|(e, _)| e);
    let page_size = align
        .map(|a| super::best_page(a, page))
        .filter(|(_, c)| sure(*c))
        .and_then(|(p, _)| p);
    let align = align.filter(|a| sure(a.confidence));
    let fat = fat.filter(|f| f.not_flash.is_none() && sure(f.confidence));
    if let Some(e) = erase {
        out.extend(erase_block_layout(info, e, page_size));
    }
    out.extend(fat_cluster(page_size));
    if let Some(a) = align {
        out.extend(erase_size_disagreements(a, erase));
    }
    if let Some(o) = open_au {
        out.extend(open_aus(o));
    }
    out.extend(fat.map(fat_area));
    // How to mount it and what a Pi's root wants, where the card showed
    // itself as flash: a confident erase block or open-AU limit.
    let open = open_au.filter(|o| o.not_flash.is_none());
    let writes = setup::Writes {
        random_iops: bench.and_then(best_random_write).map(|t| t.iops),
        open_in_order: open.and_then(|o| sure_limit(&o.linear)),
        open_random: open.and_then(|o| sure_limit(&o.random)),
    };
    if erase.is_some() || writes.open_in_order.is_some() {
        out.push(setup::mount_options(info, writes));
    }
    out.extend(setup::pi_root(writes));
    out
}

/// What must be read before any advice: a journal still to restore, and
/// the verdicts no advice is drawn from (refused, or unsure). A step of its
/// own because it speaks of the run, not of the card, and comes first.
fn cautions(m: &Measured) -> Vec<Advice> {
    let mut out = Vec::new();
    if let Some(j) = m.pending_journal {
        out.push(say(
            "pending_journal",
            format!(
                "warning: a run that did not finish left a journal for this device ({j}): some of its bytes are \
                 not back yet; run `flashlab restore` before anything else"
            ),
        ));
    }
    let refused = refused_verdicts(m);
    if !refused.is_empty() {
        out.push(say(
            "not_claimed",
            format!(
                "not claimed: {}, so no advice is drawn from {}",
                refused.join(", "),
                if refused.len() == 1 { "it" } else { "them" }
            ),
        ));
    }
    let unsure = unsure_verdicts(m);
    if !unsure.is_empty() {
        out.push(say(
            "noisy",
            format!(
                "unsure: {} (the steps were small against the noise, or the methods disagreed), so no advice is \
                 drawn from {}; a card in a direct SD slot rather than a USB reader, a quieter machine, or \
                 --erase-size if you know it, gives firmer answers",
                unsure.join(", "),
                if unsure.len() == 1 { "it" } else { "them" }
            ),
        ));
    }
    out
}

/// A fake or damaged card: a warning about the card itself, which no layout
/// mends, so it stands apart from (and before) the layout advice.
fn capacity_warning(c: &super::capacity::CapacityResult) -> Option<Advice> {
    use super::capacity::Verdict;
    match c.verdict {
        Verdict::Fake => Some(say(
            "fake",
            format!(
                "warning: this card is FAKE: it announces {} but holds only {}; anything written past byte {} \
                 is lost. Return it, or use only the first {} (one partition ending there)",
                Iec(c.announced_bytes),
                Iec(c.usable_bytes),
                c.last_good_byte,
                Iec(c.usable_bytes)
            ),
        )),
        Verdict::Damaged => Some(say(
            "damaged",
            format!(
                "warning: {} lost data or refused I/O (first at byte {}): copy off what matters \
                 and replace the card",
                crate::units::count(c.bad_regions.len() as u64, "region", "regions"),
                c.bad_regions.first().map_or(0, |b| b.offset)
            ),
        )),
        Verdict::Genuine => None,
    }
}

/// The kernel's erase size where it only guessed it: a step of its own
/// because it reads the device's registers, not a measurement, and warns
/// about the tools that trust them.
fn kernel_erase_guess(info: Option<&DeviceInfo>) -> Option<Advice> {
    let pe = info.and_then(|i| i.mmc.as_ref())?;
    let bytes = pe.preferred_erase_size_bytes?;
    (pe.preferred_erase_size_source == crate::identify::mmc::EraseSizeSource::KernelCapacityGuess).then(|| {
        say(
            "kernel_erase_guess",
            format!(
                "the kernel's preferred erase size ({}, sysfs preferred_erase_size) is only its guess from the \
                 capacity (the card states no AU): partitioning tools that read it may align to the wrong size",
                Iec(bytes)
            ),
        )
    })
}

/// What the card suits, from bench's best random 4 KiB write: the one
/// piece of advice drawn from speed rather than geometry.
fn random_writes(b: &super::bench::BenchResult) -> Option<Advice> {
    let t = best_random_write(b)?;
    let text = if t.iops >= A1_WRITE_IOPS {
        format!(
            "{:.0} random 4 KiB writes per second: suits an OS root, apps, databases",
            t.iops
        )
    } else {
        format!(
            "only {:.0} random 4 KiB writes per second (A1 asks 500): slow as an OS root or for databases; \
             keep it for large files (photos, video, backups)",
            t.iops
        )
    };
    Some(say("random_writes", text))
}

/// bench's best random 4 KiB write from a whole sample, on what may be
/// flash.
fn best_random_write(b: &super::bench::BenchResult) -> Option<&super::bench::BenchTest> {
    if b.not_flash.is_some() {
        return None;
    }
    b.tests
        .iter()
        .filter(|t| t.rw == super::bench::Rw::RandWrite && t.block_size == 4096 && !t.short_sample)
        .max_by(|x, y| x.iops.total_cmp(&y.iops))
}

/// An open-AU limit advice may draw on: claimed, and confident.
fn sure_limit(s: &Option<super::open_au::Sweep>) -> Option<u64> {
    s.as_ref().filter(|s| sure(s.confidence)).and_then(|s| s.max_open_aus)
}

/// The layout a confident erase block `e` asks for: partitions on its
/// multiples, then ext4's stripe and f2fs's section sized to it. One step
/// because all three are the same block told to different tools.
fn erase_block_layout(info: Option<&DeviceInfo>, e: u64, page_size: Option<u64>) -> Vec<Advice> {
    let mut out = Vec::new();
    // Bradford, Flashbenching: "Knowing how big each eraseblock is can be used to align
    // your partitioning scheme with the underlying media."
    let bad: Vec<String> = info
        .map(|i| i.related.partitions.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(
            |p| match (p.start_bytes.is_multiple_of(e), p.size_bytes.is_multiple_of(e)) {
                (false, _) => Some(format!("{} starts at {}", p.name, p.start_bytes)),
                // The next partition starts where this one ends.
                (true, false) => Some(format!("{} ends at {}", p.name, p.start_bytes + p.size_bytes)),
                (true, true) => None,
            },
        )
        .collect();
    let mut partitions = if bad.is_empty() {
        say(
            "align_partitions",
            format!("start and end partitions at multiples of {} (the erase block)", Iec(e)),
        )
    } else {
        say(
            "misaligned_partitions",
            format!(
                "{}: not a multiple of the {} erase block, so writes near every block edge cost two blocks; \
                 repartition at multiples of {}",
                bad.join(", "),
                Iec(e),
                Iec(e)
            ),
        )
    };
    if let Some((what, command)) = setup::partition_command(info, e) {
        partitions.text = format!("{}; {what}", partitions.text);
        partitions.command = Some(command);
    }
    out.push(partitions);
    if e >= FS_BLOCK && e.is_multiple_of(FS_BLOCK) {
        // Arnd Bergmann, "Optimizing Linux with cheap flash drives" (LWN
        // 428584): tell ext4 the erase block as its stripe so it allocates
        // and writes in whole erase blocks.
        // The page only where it is known (by the reads or the writes).
        let stride = page_size.filter(|p| *p >= FS_BLOCK).map_or(1, |p| p / FS_BLOCK);
        out.push(say(
            "ext4_layout",
            format!(
                "ext4: mkfs.ext4 -b {FS_BLOCK} -E stride={stride},stripe-width={} (stripe: erase block)",
                e / FS_BLOCK
            ),
        ));
    }
    if e >= F2FS_SEGMENT && e.is_multiple_of(F2FS_SEGMENT) {
        out.push(say(
            "f2fs_layout",
            format!(
                "f2fs: mkfs.f2fs -s {} (a section of {} segments of 2 MiB: one erase block)",
                e / F2FS_SEGMENT,
                e / F2FS_SEGMENT
            ),
        ));
    }
    out
}

/// FAT's cluster from a confident page: a step of its own because it needs
/// the page alone, and stands even where no erase block was found.
fn fat_cluster(page_size: Option<u64>) -> Option<Advice> {
    let p = page_size.filter(|p| *p >= 1024 && p.is_power_of_two())?;
    // A cluster smaller than the page makes the card program a whole
    // page for part of it (Bradford, Flashbenching: partial-page writes cost a
    // read-modify-write).
    Some(say(
        "fat_cluster",
        format!(
            "FAT/exFAT: clusters of {} or more, the page (mkfs.vfat -S 512 -s {}, mkfs.exfat -c {})",
            Iec(p),
            (p / 512).min(128),
            Iec(p).to_string().replace(' ', "").replace("iB", "")
        ),
    ))
}

/// Each stated erase size (the card's, the kernel's) a confident align
/// contradicts: advice to trust the measurement over what tools read.
fn erase_size_disagreements(align: &AlignResult, erase: Option<u64>) -> Vec<Advice> {
    align
        .references
        .iter()
        .filter(|r| r.agrees == Some(false))
        .map(|r| {
            say(
                "erase_size_disagrees",
                format!(
                    "{} says {}, but the reads show {}: trust the measurement for alignment, it is what the \
                     controller does",
                    r.source,
                    Iec(r.bytes),
                    erase.map_or("no erase block".to_string(), |e| Iec(e).to_string())
                ),
            )
        })
        .collect()
}

/// How many files to write at once, from open-au's confident limits: a
/// step of its own because it advises on use (writers, filesystems), not
/// on layout.
fn open_aus(o: &OpenAuResult) -> Vec<Advice> {
    let mut out = Vec::new();
    // open-au's own notes (how its sweep and fat's slot test were
    // reconciled) are measurement detail, shown by `open-au` and in the
    // report, not advice.
    if let Some(k) = sure_limit(&o.linear) {
        if k >= GOOD_OPEN_AUS {
            out.push(say(
                "open_aus",
                format!("{k} AUs open for in-order writes: several files can be written at once"),
            ));
        } else {
            out.push(say(
                "few_open_aus",
                format!(
                    "only {} open at once for in-order writes: writing more than {} or streams \
                     at a time makes the card copy whole erase blocks (tens of times slower); a log-structured \
                     filesystem with few logs (f2fs -o active_logs=2) or one writer at a time avoids it",
                    crate::units::count(k, "AU", "AUs"),
                    crate::units::count(k, "file", "files")
                ),
            ));
        }
    }
    if let Some(k) = sure_limit(&o.random)
        && k < ENOUGH_RANDOM_OPEN_AUS
    {
        out.push(say(
            "few_random_open_aus",
            format!(
                "only {} out-of-order writes: a filesystem's scattered metadata updates will \
                 stall it (the Flashbenching blog post wants at least {ENOUGH_RANDOM_OPEN_AUS}); prefer FAT/exFAT with its \
                 metadata in the first AUs, or f2fs",
                if k == 1 { "1 AU takes".to_string() } else { format!("{k} AUs take") }
            ),
        ));
    }
    out
}

/// Whether the card has a FAT-optimised area, from fat's confident
/// verdict: the last step, as it advises on keeping or changing the
/// factory format.
fn fat_area(f: &FatResult) -> Advice {
    if f.fat_area_aus > 0 {
        // Bradford, Flashbenching: the first erase blocks may be backed by faster flash,
        // "important when using the card with the FAT filesystem as all
        // the metadata is stored in the beginning of the disk".
        say(
            "fat_area",
            format!(
                "the first {} ({}) take small random writes cheaply: keep the factory FAT layout, or put \
                 filesystem metadata there",
                Iec(f.fat_area_aus * f.erase_size_bytes),
                crate::units::count(f.fat_area_aus, "AU", "AUs")
            ),
        )
    } else {
        say(
            "no_fat_area",
            "no FAT-optimised area: the first AUs are ordinary, so a reformat with another layout loses nothing".into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identify::sysfs::Partition;
    use crate::measure::align::Reference;
    use crate::measure::open_au::Sweep;

    fn align(erase: Option<u64>, page: Option<u64>, refs: Vec<Reference>) -> AlignResult {
        AlignResult {
            block_size: 1024,
            rows: Vec::new(),
            erase_size_bytes: erase,
            page_size_bytes: page,
            confidence: 1.0,
            page_confidence: 1.0,
            evidence: Vec::new(),
            references: refs,
            not_flash: None,
            claim: Default::default(),
        }
    }

    fn sweep(n: Option<u64>) -> Option<Sweep> {
        Some(Sweep {
            max_open_aus: n,
            tried_up_to: 32,
            runs: Vec::new(),
            confidence: 0.95,
            claim: Default::default(),
            stopped_by_budget_s: None,
            at_most: None,
        })
    }

    fn topics(a: &[Advice]) -> Vec<&str> {
        a.iter().map(|x| x.topic.as_str()).collect()
    }

    #[test]
    fn a_misaligned_partition_is_named_with_its_offset() {
        let mut info = DeviceInfo::new("/dev/mmcblk0", 4 << 30, 512, 512, crate::identify::Transport::Mmc);
        info.related.partitions = vec![
            Partition {
                name: "mmcblk0p1".into(),
                start_bytes: 63 * 512,
                size_bytes: 1 << 30,
            },
            Partition {
                name: "mmcblk0p2".into(),
                start_bytes: 4 << 30 >> 1,
                size_bytes: 1 << 30,
            },
            Partition {
                name: "mmcblk0p3".into(),
                start_bytes: 4 << 30,
                size_bytes: (1 << 30) + 512,
            },
        ];
        let a = align(Some(4 << 20), Some(16 << 10), Vec::new());
        let out = advise(&Measured {
            info: Some(&info),
            align: Some(&a),
            ..Default::default()
        });
        assert_eq!(
            topics(&out),
            [
                "misaligned_partitions",
                "ext4_layout",
                "f2fs_layout",
                "fat_cluster",
                "mount_options"
            ]
        );
        assert_eq!(
            out[0].command.as_deref(),
            Some("echo 'start=8192, size=8380416, type=83' | sudo sfdisk /dev/mmcblk0"),
            "a misaligned card gets the command that aligns it"
        );
        assert!(
            out[0].text.starts_with("mmcblk0p1 starts at 32256, "),
            "{}",
            out[0].text
        );
        assert!(!out[0].text.contains("mmcblk0p2"));
        assert!(out[0].text.contains("mmcblk0p3 ends at 5368709632"), "{}", out[0].text);
        assert!(out[1].text.contains("stride=4,stripe-width=1024"), "{}", out[1].text);
    }

    #[test]
    fn open_aus_fat_area_and_a_disagreeing_ssr_each_get_their_line() {
        let a = align(
            Some(4 << 20),
            None,
            vec![Reference {
                source: "the card's SSR AU size".into(),
                bytes: 8 << 20,
                agrees: Some(false),
            }],
        );
        let mut o = OpenAuResult {
            not_flash: None,
            erase_size_bytes: 4 << 20,
            chunk_bytes: 16 << 10,
            linear: sweep(Some(3)),
            random: sweep(Some(2)),
            notes: Vec::new(),
        };
        let mut f = FatResult {
            not_flash: None,
            claim: Default::default(),
            confidence: 0.95,
            erase_size_bytes: 4 << 20,
            fat_area_aus: 2,
            chunk_bytes: 16 << 10,
            reference_au: 10,
            reference_median_ns: 1.0,
            aus: Vec::new(),
            method: Default::default(),
            random_aus: None,
            fits_ns: None,
            overflows_ns: None,
            notes: Vec::new(),
        };
        let out = advise(&Measured {
            align: Some(&a),
            open_au: Some(&o),
            fat: Some(&f),
            ..Default::default()
        });
        assert_eq!(
            topics(&out),
            [
                "align_partitions",
                "ext4_layout",
                "f2fs_layout",
                "erase_size_disagrees",
                "few_open_aus",
                "few_random_open_aus",
                "fat_area",
                "mount_options",
                "pi_root"
            ]
        );
        assert!(
            out[8].text.starts_with("Pi root: f2fs with -o active_logs=2: "),
            "3 in order, 2 at random: {}",
            out[8].text
        );
        assert!(out[1].text.contains("stride=1,"), "unknown page: stride 1");
        assert!(out[2].text.contains("mkfs.f2fs -s 2"), "4 MiB: two 2 MiB segments");
        assert!(
            out[3]
                .text
                .contains("the card's SSR AU size says 8 MiB, but the reads show 4 MiB")
        );
        assert!(out[4].text.starts_with("only 3 AUs"));
        assert!(out[6].text.contains("first 8 MiB (2 AUs)"));
        let good = OpenAuResult {
            linear: sweep(Some(6)),
            random: sweep(Some(4)),
            ..o.clone()
        };
        assert_eq!(
            topics(&advise(&Measured {
                open_au: Some(&good),
                ..Default::default()
            })),
            ["open_aus", "mount_options", "pi_root"]
        );
        // Unsure verdicts give no advice (the erase block, the limits, the
        // area), only the warning that names them.
        let unsure = AlignResult {
            confidence: 0.6,
            ..a.clone()
        };
        for s in [&mut o.linear, &mut o.random].into_iter().flatten() {
            s.confidence = 0.5;
        }
        f.confidence = 0.5;
        let out = advise(&Measured {
            align: Some(&unsure),
            open_au: Some(&o),
            fat: Some(&f),
            ..Default::default()
        });
        assert_eq!(topics(&out), ["noisy"]);
        assert!(
            out[0]
                .text
                .starts_with("unsure: erase block, open AUs in order, open AUs at random, FAT area"),
            "{}",
            out[0].text
        );
        // A limit the budget refused is not noise: named apart, with why.
        if let Some(s) = o.random.as_mut() {
            s.refuse(claim::out_of_budget(42.0, "no collapse up to 4 open AUs"));
        }
        let out = advise(&Measured {
            open_au: Some(&o),
            ..Default::default()
        });
        assert_eq!(topics(&out), ["not_claimed", "noisy"]);
        assert_eq!(
            out[0].text,
            "not claimed: open AUs at random (unsure: stopped after 42 device-seconds by the step's budget), so no \
             advice is drawn from it"
        );
        assert!(
            out[1].text.starts_with("unsure: open AUs in order ("),
            "{}",
            out[1].text
        );
    }

    #[test]
    fn a_fake_card_is_warned_about_first_with_the_size_to_use() {
        let c: crate::measure::capacity::CapacityResult = serde_json::from_value(serde_json::json!({
            "verdict": "fake", "kind": "drop", "announced_bytes": 64u64 << 30,
            "usable_bytes": 7948206080u64, "last_good_byte": 7948206079u64, "reads_past": "zeros",
            "boundary": null, "bad_regions": [], "bytes_written": 1, "samples": 1, "read_probes": 1,
            "stages": 1, "skip_bytes": 1048576, "push_bytes": 1, "limits": []
        }))
        .unwrap();
        let out = advise(&Measured {
            capacity: Some(&c),
            ..Default::default()
        });
        assert_eq!(out[0].topic, "fake");
        assert!(
            out[0].text.contains("7.40 GiB") && out[0].text.contains("7948206079"),
            "{}",
            out[0].text
        );
    }

    #[test]
    fn unsure_verdicts_and_a_pending_journal_are_warned_about() {
        let mut a = align(Some(4 << 20), None, vec![]);
        a.confidence = 0.5;
        let out = advise(&Measured {
            align: Some(&a),
            pending_journal: Some("/var/lib/flashlab/journals/x.fljournal"),
            ..Default::default()
        });
        assert_eq!(topics(&out)[..2], ["pending_journal", "noisy"]);
        assert!(out[0].text.contains("flashlab restore"));
        assert!(out[1].text.starts_with("unsure: erase block"), "{}", out[1].text);
        assert!(
            !topics(&out).contains(&"align_partitions"),
            "no advice from an unsure erase block"
        );
    }
}
