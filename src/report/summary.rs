//! The one-screen summary of a run: the device, the verdicts (genuine or
//! fake, the SD classes met), the geometry with its confidence and the key
//! speeds, as label and value lines. probe's text output and the HTML
//! report both print it first; details follow.

use crate::document::RunDocument;
use crate::measure::bench::{BenchResult, Rw};
use crate::measure::capacity::{CapacityResult, FakeKind, Verdict};
use crate::measure::{CONFIDENT, align::AlignResult, fat::FatResult, open_au, open_au::OpenAuResult};
use crate::units::Iec;

/// (label, value) lines, in reading order.
pub fn lines(doc: &RunDocument) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    out.push(("device", crate::store::device_key::of(doc).name));
    if let Some(c) = doc.get::<CapacityResult>("capacity") {
        out.push(("capacity", capacity(&c)));
    }
    if let Some(b) = doc.get::<BenchResult>("bench") {
        if let Some(why) = &b.not_flash {
            out.push(("classes", format!("none judged: the target is {why}")));
        } else if !b.classes.is_empty() {
            out.push(("classes", classes(&b)));
        }
        if let Some(s) = speeds(&b) {
            out.push(("speeds", s));
        }
    }
    if let Some(a) = doc.get::<AlignResult>("align") {
        match &a.not_flash {
            Some(why) => out.push((
                "geometry",
                format!("no flash behaviour to measure: the target is {why}"),
            )),
            None => {
                let au = doc.get::<crate::measure::au::AuResult>("au");
                let (e, c) = crate::measure::au::best(&a, au.as_ref());
                let erase = match e {
                    Some(e) if c >= CONFIDENT => format!("{} (the allocation unit, AU; confidence {c:.2})", Iec(e)),
                    Some(e) => format!("perhaps {} (unsure: confidence {c:.2})", Iec(e)),
                    None => format!("not visible (confidence {c:.2})"),
                };
                let page = doc.get::<crate::measure::page::PageResult>("page");
                let (p, pc) = crate::measure::page::best(&a, page.as_ref());
                let page = match p {
                    Some(p) if pc >= CONFIDENT => Iec(p).to_string(),
                    Some(p) => format!("perhaps {} (unsure)", Iec(p)),
                    None => "not visible".into(),
                };
                out.push(("erase block", format!("{erase}, page {page}")));
            }
        }
    }
    if let Some(r) = doc.get::<OpenAuResult>("open_au") {
        let show = |s: &Option<open_au::Sweep>| match s {
            Some(s) => {
                let unsure = if s.confidence >= CONFIDENT { "" } else { " (unsure)" };
                match s.max_open_aus {
                    Some(n) => format!("{n}{unsure}"),
                    None => format!("no limit up to {}{unsure}", s.tried_up_to),
                }
            }
            None => "-".to_string(),
        };
        out.push((
            "open AUs",
            format!("{} in order, {} random", show(&r.linear), show(&r.random)),
        ));
    }
    if let Some(f) = doc.get::<FatResult>("fat") {
        let n = f.fat_area_aus;
        let area = match n {
            0 => "none: the first AUs are ordinary".to_string(),
            n => format!(
                "{} ({})",
                crate::units::count(n, "AU", "AUs"),
                Iec(n * f.erase_size_bytes)
            ),
        };
        out.push((
            "FAT area",
            format!("{area}{}", if f.confidence >= CONFIDENT { "" } else { " (unsure)" }),
        ));
    }
    out
}

fn capacity(c: &CapacityResult) -> String {
    match (c.verdict, c.kind) {
        (Verdict::Genuine, _) => format!("genuine: all {} hold data", Iec(c.announced_bytes)),
        (Verdict::Fake, k) => format!(
            "FAKE: announces {}, holds {} ({})",
            Iec(c.announced_bytes),
            Iec(c.usable_bytes),
            match k {
                Some(FakeKind::Wrap) => "addresses wrap",
                Some(FakeKind::Cache) => "writes past it kept only by a cache",
                _ => "writes past it are lost",
            }
        ),
        (Verdict::Damaged, _) => format!(
            "damaged: {}",
            crate::units::count(c.bad_regions.len() as u64, "bad region", "bad regions")
        ),
    }
}

/// The application class met (A2 over A1), the best speed, UHS and video
/// classes met, as "A1-style, C10, U3, V30 (measured, not certified)".
fn classes(b: &BenchResult) -> String {
    let met = |names: &[&str]| {
        names
            .iter()
            .rev()
            .find(|n| b.classes.get(**n) == Some(&true))
            .map(|n| n.to_string())
    };
    let groups = [
        &["A1", "A2"][..],
        &["C2", "C4", "C6", "C10"],
        &["U1", "U3"],
        &["V6", "V10", "V30", "V60", "V90"],
    ];
    let found: Vec<String> = groups.iter().filter_map(|g| met(g)).collect();
    if found.is_empty() {
        "none met (measured, not certified)".into()
    } else {
        let styled: Vec<String> = found.iter().map(|c| format!("{c}-style")).collect();
        format!("{} (measured here, not certified)", styled.join(", "))
    }
}

/// Sequential read and write, random 4 KiB read and write at queue depth
/// one: the figures a buyer compares.
fn speeds(b: &BenchResult) -> Option<String> {
    let find = |rw: Rw| b.tests.iter().find(|t| t.rw == rw);
    let mut parts = Vec::new();
    for (rw, what) in [(Rw::Read, "read"), (Rw::Write, "write")] {
        if let Some(t) = find(rw) {
            parts.push(format!("{what} {:.1} MB/s", t.bytes_per_sec / 1e6));
        }
    }
    for (rw, what) in [(Rw::RandRead, "4K random read"), (Rw::RandWrite, "4K random write")] {
        if let Some(t) = b.tests.iter().find(|t| t.rw == rw && t.block_size == 4096) {
            parts.push(format!("{what} {:.0} IOPS", t.iops));
        }
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}
