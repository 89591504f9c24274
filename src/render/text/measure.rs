//! align, open-au, fat, page and scatter as tables and one-line verdicts.

use std::fmt::Write;

use crate::console::table;
use crate::measure::{
    align::AlignResult, au::AuResult, fat::FatResult, fat::Method, median, open_au::OpenAuResult, page::PageResult,
    scatter::ScatterResult,
};
use crate::units::{Iec, duration_ns, mb_per_s};

pub fn align(o: &mut String, r: &AlignResult, device_s: f64) {
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| {
            vec![
                Iec(row.boundary_bytes).to_string(),
                duration_ns(row.pre_ns),
                duration_ns(row.on_ns),
                duration_ns(row.post_ns),
                duration_ns(row.diff_ns),
                duration_ns(row.diff_spread_ns),
                row.samples.to_string(),
            ]
        })
        .collect();
    let _ = writeln!(
        o,
        "{}",
        table::grid(&["boundary", "pre", "on", "post", "diff", "spread", "samples"], &rows)
    );
    for e in &r.evidence {
        let _ = writeln!(o, "{}", super::wrap(e, "  ", "  "));
    }
    for x in &r.references {
        let verdict = match x.agrees {
            Some(true) => "agrees",
            Some(false) => "differs",
            None => "not compared",
        };
        let _ = writeln!(o, "  {}: {} ({verdict})", x.source, Iec(x.bytes));
    }
    if let Some(why) = &r.not_flash {
        let line = format!("no flash behaviour to measure: the target is {why}; {device_s:.1} device-seconds");
        let _ = writeln!(o, "{}", super::wrap(&line, "", ""));
        return;
    }
    let line = format!(
        "{}, {}; {device_s:.1} device-seconds",
        verdict("erase block", r.erase_size_bytes, r.confidence),
        verdict("page", r.page_size_bytes, r.page_confidence),
    );
    let _ = writeln!(o, "{}", super::wrap(&line, "", ""));
}

/// A size verdict worded by its confidence: a size stated plainly when
/// confident, marked unsure below that, and "none" with how sure of none.
pub fn verdict(what: &str, v: Option<u64>, p: f64) -> String {
    match v {
        Some(b) if p >= crate::measure::CONFIDENT => format!("{what} {} (confidence {p:.2})", Iec(b)),
        Some(b) => format!("{what} perhaps {} (unsure: confidence {p:.2})", Iec(b)),
        None => format!("no {what} step visible in the reads (confidence {p:.2}: flash has one, the reads hide it)"),
    }
}

pub fn open_au(o: &mut String, r: &OpenAuResult, device_s: f64) {
    let (erase, chunk) = (r.erase_size_bytes, r.chunk_bytes);
    for (name, sweep) in [("linear", &r.linear), ("random", &r.random)] {
        let Some(sw) = sweep else { continue };
        let rows: Vec<Vec<String>> = sw
            .runs
            .iter()
            .flat_map(|run| {
                run.levels.iter().map(move |l| {
                    vec![
                        run.open_aus.to_string(),
                        Iec(l.chunk_bytes).to_string(),
                        mb_per_s(l.bytes_per_sec),
                        l.writes.to_string(),
                        // Per level: a run stops early only at the chunk sizes
                        // where it collapsed.
                        if (l.writes as u64) < run.open_aus * erase / l.chunk_bytes {
                            "stopped early".into()
                        } else if l.collapsed {
                            "collapsed".into()
                        } else {
                            String::new()
                        },
                    ]
                })
            })
            .collect();
        let _ = writeln!(o, "{name}:");
        let _ = writeln!(
            o,
            "{}",
            table::grid(&["open AUs", "chunk", "rate", "writes", ""], &rows)
        );
        let noted = r.notes.iter().any(|n| n.starts_with(name));
        let sure = if noted {
            format!("confidence {:.2}, see the note", sw.confidence)
        } else if sw.confidence >= crate::measure::CONFIDENT {
            format!("confidence {:.2}", sw.confidence)
        } else {
            format!(
                "unsure: confidence {:.2}, the confirmation pass disagreed",
                sw.confidence
            )
        };
        let _ = match sw.max_open_aus {
            Some(n) => writeln!(o, "{name}: {n} open AUs (writes collapse at {}; {sure})", n + 1),
            None if r.not_flash.is_some() => writeln!(o, "{name}: no open-AU limit claimed"),
            None => writeln!(o, "{name}: no collapse up to {} open AUs ({sure})", sw.tried_up_to),
        };
    }
    for n in &r.notes {
        let _ = writeln!(o, "{}", super::wrap(n, "note: ", "      "));
    }
    let _ = writeln!(
        o,
        "erase size {}, chunk {}; {device_s:.1} device-seconds",
        Iec(erase),
        Iec(chunk)
    );
}

pub fn fat(o: &mut String, r: &FatResult, device_s: f64) {
    let label = |a: &crate::measure::fat::AuRow| -> String {
        if a.in_area {
            "FAT area".into()
        } else if a.fast {
            "fast (not counted)".into()
        } else {
            String::new()
        }
    };
    let slots = r.method == Method::Slots;
    let mut rows: Vec<Vec<String>> = r
        .aus
        .iter()
        .map(|a| {
            let mut row = vec![a.au.to_string(), duration_ns(a.median_ns)];
            if slots {
                row.push(a.merging.map_or(String::new(), |m| format!("{:.0}%", m * 100.0)));
            } else {
                row.push(mb_per_s(a.bytes_per_sec));
            }
            row.push(label(a));
            row
        })
        .collect();
    if slots {
        let n = r.random_aus.unwrap_or(0);
        let text = format!(
            "Each AU was written in random order ({} writes) beside {n} ordinary AU{}, as many as the card \
             keeps open for random writes. An AU of the FAT area leaves them room; an ordinary AU is one \
             too many, and writes start to merge whole AUs.",
            Iec(r.chunk_bytes),
            if n == 1 { "" } else { "s" },
        );
        let _ = writeln!(o, "{}", super::wrap(&text, "", ""));
        rows.push(vec![
            format!("{} (control)", r.reference_au),
            duration_ns(r.overflows_ns.unwrap_or(0.0)),
            String::new(),
            "ordinary".into(),
        ]);
        let _ = writeln!(o, "{}", table::grid(&["AU", "typical write", "merging", ""], &rows));
    } else {
        rows.push(vec![
            format!("{} (reference)", r.reference_au),
            duration_ns(r.reference_median_ns),
            mb_per_s(r.chunk_bytes as f64 * 1e9 / r.reference_median_ns.max(1.0)),
            String::new(),
        ]);
        let _ = writeln!(o, "{}", table::grid(&["AU", "median write", "rate", ""], &rows));
    }
    for n in &r.notes {
        let _ = writeln!(o, "{}", super::wrap(n, "note: ", "      "));
    }
    let verdict = match (&r.not_flash, r.fat_area_aus) {
        (Some(why), _) => format!("no FAT area claimed: the target is {why}"),
        (None, 0) => format!("no FAT-optimised area ({:.2} sure there is none)", r.confidence),
        (None, n) => format!(
            "FAT-optimised area: {n} AU{} of {} (confidence {:.2})",
            if n == 1 { "" } else { "s" },
            Iec(r.erase_size_bytes),
            r.confidence
        ),
    };
    let line = format!("{verdict}; {device_s:.1} device-seconds");
    let _ = writeln!(o, "{}", super::wrap(&line, "", ""));
}

pub fn bench(o: &mut String, r: &crate::measure::bench::BenchResult, device_s: f64) {
    let rows: Vec<Vec<String>> = r
        .tests
        .iter()
        .map(|t| {
            let l = &t.latency_ns;
            vec![
                t.name.clone(),
                format!("{:.0}", t.iops),
                mb_per_s(t.bytes_per_sec),
                duration_ns(l.p50 as f64),
                duration_ns(l.p99 as f64),
                duration_ns(l.max as f64),
            ]
        })
        .collect();
    let _ = writeln!(
        o,
        "{}",
        table::grid(&["test", "IOPS", "rate", "p50", "p99", "max"], &rows)
    );
    let line = format!(
        "latency per request, from submission to completion; {device_s:.1} device-seconds (--json and \
         `flashlab report` have mean, p90, p99.9 and throughput over time)"
    );
    let _ = writeln!(o, "{}", super::wrap(&line, "", ""));
    if let Some(why) = &r.not_flash {
        let _ = writeln!(
            o,
            "{}",
            super::wrap(&format!("no SD class verdicts: the target is {why}"), "", "")
        );
    }
    if r.classes.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "{}",
        super::wrap(&format!("SD classes, {}:", crate::measure::classes::CAVEAT), "", "")
    );
    let num = |v: f64| {
        if v >= 100.0 || v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    let rows: Vec<Vec<String>> = crate::measure::classes::names()
        .filter_map(|name| Some((r.class_figures.get(name)?, r.classes.get(name)?)))
        .map(|(f, met)| {
            let iops: Vec<&crate::measure::classes::Figure> =
                f.figures.iter().filter(|x| x.what.contains("IOPS")).collect();
            let mb = f.figures.iter().find(|x| x.what.contains("MB/s"));
            let side = |pick: &dyn Fn(&crate::measure::classes::Figure) -> f64| {
                let mut parts = Vec::new();
                if !iops.is_empty() {
                    let v: Vec<String> = iops.iter().map(|x| num(pick(x))).collect();
                    parts.push(format!("{} IOPS", v.join(" / ")));
                }
                if let Some(m) = mb {
                    parts.push(format!("{} MB/s", num(pick(m))));
                }
                parts.join(", ")
            };
            vec![
                f.label.clone(),
                if *met { "yes" } else { "no" }.to_string(),
                side(&|x| x.needed),
                side(&|x| x.measured),
            ]
        })
        .collect();
    let _ = writeln!(
        o,
        "{}",
        table::grid(&["class", "met", "needs (read / write)", "measured"], &rows)
    );
    let _ = writeln!(
        o,
        "(IOPS: random 4 KiB; MB/s: the slowest stretch of the longest sequential write)"
    );
}

pub fn au(o: &mut String, r: &AuResult, device_s: f64) {
    if let Some(n) = r.random_aus {
        let text = format!(
            "The card keeps {n} AU{} open for random writes. Two regions written in random order \
             beside {} other AU{} share one of those while they lie in one AU; a distance of one AU or more \
             makes them two, one too many, and writes start to merge.",
            if n == 1 { "" } else { "s" },
            n - 1,
            if n == 2 { "" } else { "s" },
        );
        let _ = writeln!(o, "{}", super::wrap(&text, "", ""));
    }
    let rows: Vec<Vec<String>> = r
        .candidates
        .iter()
        .map(|c| {
            vec![
                Iec(c.size_bytes).to_string(),
                format!("{:.0}%", c.merging * 100.0),
                if c.overflows { "two AUs".into() } else { "one AU".into() },
            ]
        })
        .collect();
    if !rows.is_empty() {
        let _ = writeln!(o, "{}", table::grid(&["distance", "merging", "regions in"], &rows));
    }
    for n in &r.notes {
        let _ = writeln!(o, "{}", super::wrap(n, "note: ", "      "));
    }
    let v = match &r.not_flash {
        Some(why) => format!("no erase block claimed: the target is {why}"),
        None => match r.erase_size_bytes {
            Some(e) if r.confidence >= crate::measure::CONFIDENT => {
                format!("erase block {} (confidence {:.2})", Iec(e), r.confidence)
            }
            Some(e) => format!(
                "erase block perhaps {} (unsure: confidence {:.2})",
                Iec(e),
                r.confidence
            ),
            None => "no erase block from writes".to_string(),
        },
    };
    let line = format!("{v}; {device_s:.1} device-seconds");
    let _ = writeln!(o, "{}", super::wrap(&line, "", ""));
}

pub fn page(o: &mut String, r: &PageResult, device_s: f64) {
    let rows: Vec<Vec<String>> = r
        .candidates
        .iter()
        .map(|c| {
            vec![
                Iec(c.size_bytes).to_string(),
                format!(
                    "{}{} ± {}",
                    if c.step_ns < 0.0 { "-" } else { "" },
                    duration_ns(c.step_ns.abs()),
                    duration_ns(c.se_ns)
                ),
                c.pairs.to_string(),
                if c.step { "step".into() } else { String::new() },
            ]
        })
        .collect();
    let text = format!(
        "{} writes straddling each multiple of a size, against {} writes ending there: where the page \
         divides the size, the straddling write programs a second page.",
        Iec(r.write_bytes),
        Iec(r.write_bytes)
    );
    let _ = writeln!(o, "{}", super::wrap(&text, "", ""));
    let _ = writeln!(o, "{}", table::grid(&["boundary", "extra cost", "pairs", ""], &rows));
    let verdict = match (&r.not_flash, r.page_size_bytes) {
        (Some(why), _) => format!("no page claimed: the target is {why}"),
        (None, Some(p)) if r.confidence >= crate::measure::CONFIDENT => {
            format!("page {} (confidence {:.2})", Iec(p), r.confidence)
        }
        (None, Some(p)) => format!("page perhaps {} (unsure: confidence {:.2})", Iec(p), r.confidence),
        (None, None) => format!(
            "no page size from writes (confidence {:.2}): no step, or one already at the smallest size, \
             where a page of two blocks or less looks the same",
            r.confidence
        ),
    };
    let line = format!("{verdict}; {device_s:.1} device-seconds");
    let _ = writeln!(o, "{}", super::wrap(&line, "", ""));
}

pub fn scatter(o: &mut String, r: &ScatterResult) {
    let lat: Vec<f64> = r.points.iter().map(|p| p.latency_ns as f64).collect();
    let max = r.points.iter().max_by_key(|p| p.latency_ns).map_or(0, |p| p.offset);
    let _ = writeln!(
        o,
        "{} reads of {} from {}: median {}, max {} at byte {max}; --csv or --json for every point",
        r.points.len(),
        Iec(r.block_size),
        r.offset_bytes,
        duration_ns(median(&lat)),
        duration_ns(lat.iter().copied().fold(0.0, f64::max))
    );
}

pub fn capacity(o: &mut String, r: &crate::measure::capacity::CapacityResult, device_s: f64) {
    use crate::measure::capacity::{FakeKind, Verdict};
    let bytes = |n: u64| format!("{} ({n} bytes)", Iec(n));
    let head = match (r.verdict, r.kind) {
        (Verdict::Genuine, _) => format!(
            "genuine: every sampled block across the announced {} read back from its own place",
            bytes(r.announced_bytes)
        ),
        (Verdict::Fake, kind) => {
            let how = match kind {
                Some(FakeKind::Wrap) => "addresses wrap: a write past it lands on earlier data",
                Some(FakeKind::Cache) => "writes past it read back only while the card's cache holds them",
                _ => "writes past it are lost",
            };
            format!(
                "FAKE: announced {}, but only the first {} hold data; {how}{}",
                bytes(r.announced_bytes),
                bytes(r.usable_bytes),
                r.reads_past
                    .as_ref()
                    .map_or(String::new(), |w| format!(" (reads there return {w})"))
            )
        }
        (Verdict::Damaged, _) => format!(
            "damaged: the announced {} is there, but {} lost data or refused I/O",
            bytes(r.announced_bytes),
            crate::units::count(r.bad_regions.len() as u64, "region", "regions")
        ),
    };
    let _ = writeln!(o, "{}", super::wrap(&head, "", "  "));
    if let Some((lo, hi)) = r.boundary {
        let _ = writeln!(
            o,
            "{}",
            super::wrap(
                &format!("  the real size lies between {} and {} bytes", lo, hi),
                "",
                "  "
            )
        );
    }
    for b in r.bad_regions.iter().take(10) {
        let _ = writeln!(o, "  bad: {} from byte {} ({:?})", Iec(b.len), b.offset, b.evidence);
    }
    if r.bad_regions.len() > 10 {
        let _ = writeln!(o, "  ... and {} more (--json lists them)", r.bad_regions.len() - 10);
    }
    let summary = format!(
        "checked {} written blocks in {} and {} read probes; wrote {} (the originals \
         are written back). Not seen: a real size within {} of either end, a write cache larger \
         than the {} push (--push).",
        r.samples,
        crate::units::count(r.stages as u64, "stage", "stages"),
        r.read_probes,
        Iec(r.bytes_written),
        Iec(r.skip_bytes),
        Iec(r.push_bytes)
    );
    let _ = writeln!(o, "{}", super::wrap(&summary, "", ""));
    let _ = writeln!(o, "{device_s:.1} device-seconds");
}
