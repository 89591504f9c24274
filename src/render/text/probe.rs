//! `probe`: the device and its verdicts on one screen, then advice.

use std::fmt::Write;

use crate::device::DeviceInfo;
use crate::measure::advice::Advice;
use crate::measure::{align::AlignResult, fat::FatResult, open_au, open_au::OpenAuResult};
use crate::run::document::RunDocument;
use crate::units::Iec;

use super::wrap;

pub fn probe(o: &mut String, doc: &RunDocument) {
    let spec = doc.target.as_ref().map_or("", |t| t.spec.as_str());
    let what = doc
        .get::<DeviceInfo>("info")
        .map(|i| {
            let name = [i.vendor.as_deref(), i.model.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            if name.is_empty() {
                format!("{} ({})", i.size_iec, i.transport)
            } else {
                format!("{name}, {} ({})", i.size_iec, i.transport)
            }
        })
        .unwrap_or_default();
    let _ = writeln!(o, "{spec}: {what}");
    let size = |v: Option<u64>| v.map_or("not visible".to_string(), |x| Iec(x).to_string());
    if let Some(a) = doc.get::<AlignResult>("align") {
        match &a.not_flash {
            Some(why) => {
                let line = format!("no flash behaviour to measure: the target is {why}");
                let _ = writeln!(o, "{}", wrap(&line, "  ", "  "));
            }
            None => {
                let au = doc.get::<crate::measure::au::AuResult>("au");
                let (e, c) = crate::measure::au::best(&a, au.as_ref());
                let v = super::measure::verdict("erase block", e, c);
                let v = v.strip_prefix("erase block ").unwrap_or(&v);
                let page = doc.get::<crate::measure::page::PageResult>("page");
                let (p, c) = crate::measure::page::best(&a, page.as_ref());
                let p = match p {
                    Some(p) if c >= crate::measure::CONFIDENT => Iec(p).to_string(),
                    Some(p) => format!("perhaps {} (unsure)", Iec(p)),
                    None => size(None),
                };
                let _ = writeln!(o, "  erase block  {v}, page {p}");
            }
        }
    }
    if let Some(r) = doc.get::<OpenAuResult>("open_au") {
        let unsure = |s: &open_au::Sweep| {
            if s.confidence >= crate::measure::CONFIDENT {
                ""
            } else {
                " (unsure)"
            }
        };
        let show = |s: &Option<open_au::Sweep>| match s {
            Some(s) => match s.max_open_aus {
                Some(n) => format!("{n}{}", unsure(s)),
                None => format!("no limit up to {}{}", s.tried_up_to, unsure(s)),
            },
            None => "-".to_string(),
        };
        let _ = writeln!(
            o,
            "  open AUs     {} in order, {} random",
            show(&r.linear),
            show(&r.random)
        );
    }
    if let Some(f) = doc.get::<FatResult>("fat") {
        let _ = writeln!(
            o,
            "  FAT area     {} AU(s) ({}){}",
            f.fat_area_aus,
            Iec(f.fat_area_aus * f.erase_size_bytes),
            if f.confidence >= crate::measure::CONFIDENT {
                ""
            } else {
                " (unsure)"
            }
        );
    }
    for s in doc.get::<Vec<String>>("skipped").unwrap_or_default() {
        let _ = writeln!(o, "{}", wrap(&s, "  skipped      ", "               "));
    }
    let advice = doc.get::<Vec<Advice>>("advice").unwrap_or_default();
    if !advice.is_empty() {
        let _ = writeln!(o, "advice:");
        for a in &advice {
            let _ = writeln!(o, "{}", wrap(&a.text, "  - ", "    "));
        }
    }
    let _ = writeln!(o, "{:.1} device-seconds", doc.device_time_s.unwrap_or(0.0));
}
