//! `probe`: the device and its verdicts on one screen, then advice.

use std::fmt::Write;

use crate::device::DeviceInfo;
use crate::measure::advice::Advice;
use crate::measure::{align::AlignResult, fat::FatResult, open_au, open_au::OpenAuResult};
use crate::run::document::RunDocument;
use crate::units::Iec;

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
            format!("{name}, {} ({})", i.size_iec, i.transport)
        })
        .unwrap_or_default();
    let _ = writeln!(o, "{spec}: {what}");
    let size = |v: Option<u64>| v.map_or("not visible".to_string(), |x| Iec(x).to_string());
    if let Some(a) = doc.get::<AlignResult>("align") {
        match &a.not_flash {
            Some(why) => {
                let _ = writeln!(o, "  no flash behaviour to measure: the target is {why}");
            }
            None => {
                let _ = writeln!(
                    o,
                    "  {}, page {}",
                    super::measure::verdict("erase block", a.erase_size_bytes, a.confidence),
                    size(a.page_size_bytes)
                );
            }
        }
    }
    if let Some(r) = doc.get::<OpenAuResult>("open_au") {
        let show = |s: &Option<open_au::Sweep>| match s.as_ref().map(|s| (s.max_open_aus, s.tried_up_to)) {
            Some((Some(n), _)) => n.to_string(),
            Some((None, up_to)) => format!("no limit up to {up_to}"),
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
            "  FAT area     {} AU(s) ({})",
            f.fat_area_aus,
            Iec(f.fat_area_aus * f.erase_size_bytes)
        );
    }
    for s in doc.get::<Vec<String>>("skipped").unwrap_or_default() {
        let _ = writeln!(o, "  skipped      {s}");
    }
    let advice = doc.get::<Vec<Advice>>("advice").unwrap_or_default();
    if !advice.is_empty() {
        let _ = writeln!(o, "advice:");
        for a in &advice {
            let _ = writeln!(o, "  - {}", a.text);
        }
    }
    let _ = writeln!(o, "{:.1} device-seconds", doc.device_time_s.unwrap_or(0.0));
}
