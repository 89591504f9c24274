//! `flashlab probe [TARGET]`: identify the target, run every characterisation
//! test the user's consent allows, and say what the results mean. The main job:
//! one command for someone who does not know flashbench.

use serde::Serialize;

use super::measure::{self, Geometry, OpenAuArgs};
use super::write::WriteOpts;
use crate::device::DeviceInfo;
use crate::error::CliResult;
use crate::measure::advice::{Advice, advise};
use crate::measure::{align, fat, open_au};
use crate::output::json;
use crate::seam::TargetKind;
use crate::seam::real::EngineChoice;
use crate::units::Iec;

/// Every test's result under its own key (DESIGN.md's JSON contract); a test
/// that did not run is null and `skipped` says why.
#[derive(Serialize)]
struct Body {
    info: Option<DeviceInfo>,
    align: align::AlignResult,
    open_au: Option<open_au::OpenAuResult>,
    fat: Option<fat::FatResult>,
    advice: Vec<Advice>,
    skipped: Vec<String>,
}

pub fn run(spec: &str, opts: &WriteOpts, engine: EngineChoice, as_json: bool) -> CliResult<()> {
    let mut t = measure::read_only(spec, engine)?;
    let desc = t.description().clone();
    let info = super::info::describe(spec, t.as_ref());
    let refs = measure::references(spec, t.as_ref());
    let a = align::run(t.as_mut(), &refs).map_err(measure::measure_error)?;
    let mut device_ns = t.device_time_ns();
    drop(t);
    let real = desc.kind != TargetKind::Sim;
    let mut skipped = Vec::new();
    let mut writing = true;
    if a.erase_size_bytes.is_none() {
        skipped.push(
            "open-au and fat: align saw no erase block; run them with --erase-size SIZE if you know it".to_string(),
        );
        writing = false;
    } else if real && !opts.write {
        skipped.push(
            "open-au and fat write to the target: add --write (its data is journalled, restored and verified)"
                .to_string(),
        );
        writing = false;
    } else if real && info.as_ref().is_some_and(|i| i.in_use) {
        skipped.push(
            "open-au and fat: the target is in use (mounted or held); unmount it to run the writing tests".to_string(),
        );
        writing = false;
    }
    let (mut o, mut f) = (None, None);
    if writing && let Some(erase) = a.erase_size_bytes {
        let g = Geometry {
            erase,
            page: a.page_size_bytes,
            block: u64::from(desc.logical_block_size),
            size: desc.size_bytes,
        };
        let args = OpenAuArgs {
            erase: None,
            chunk: None,
            max: None,
            random_only: false,
            linear_only: false,
            full: false,
        };
        let (t, r) = measure::run_open_au(spec, &g, &args, opts, engine)?;
        device_ns += t.device_time_ns();
        o = Some(r);
        let (t, r) = measure::run_fat(spec, &g, measure::DEFAULT_FAT_AUS, opts, engine)?;
        device_ns += t.device_time_ns();
        f = Some(r);
    }
    let advice = advise(info.as_ref(), Some(&a), o.as_ref(), f.as_ref());
    let body = Body {
        info,
        align: a,
        open_au: o,
        fat: f,
        advice,
        skipped,
    };
    if as_json {
        json::print(&json::Envelope {
            schema_version: json::SCHEMA_VERSION,
            command: "probe",
            target: Some(&desc),
            device_time_s: Some(device_ns as f64 / 1e9),
            body,
        });
    } else {
        print_text(&desc.spec, &body, device_ns);
    }
    Ok(())
}

fn print_text(spec: &str, b: &Body, device_ns: u64) {
    let what = b
        .info
        .as_ref()
        .map(|i| {
            let name = [i.vendor.as_deref(), i.model.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            format!("{name}, {} ({})", i.size_iec, i.transport)
        })
        .unwrap_or_default();
    crate::outln!("{spec}: {what}");
    let size = |v: Option<u64>| v.map_or("not visible".to_string(), |x| Iec(x).to_string());
    crate::outln!(
        "  erase block  {} (confidence {:.2}), page {}",
        size(b.align.erase_size_bytes),
        b.align.confidence,
        size(b.align.page_size_bytes)
    );
    if let Some(o) = &b.open_au {
        let show = |s: &Option<open_au::Sweep>| match s.as_ref().map(|s| (s.max_open_aus, s.tried_up_to)) {
            Some((Some(n), _)) => n.to_string(),
            Some((None, up_to)) => format!("no limit up to {up_to}"),
            None => "-".to_string(),
        };
        crate::outln!(
            "  open AUs     {} in order, {} random",
            show(&o.linear),
            show(&o.random)
        );
    }
    if let Some(f) = &b.fat {
        crate::outln!(
            "  FAT area     {} AU(s) ({})",
            f.fat_area_aus,
            Iec(f.fat_area_aus * f.erase_size_bytes)
        );
    }
    for s in &b.skipped {
        crate::outln!("  skipped      {s}");
    }
    if !b.advice.is_empty() {
        crate::outln!("advice:");
        for a in &b.advice {
            crate::outln!("  - {}", a.text);
        }
    }
    crate::outln!("{:.1} device-seconds", device_ns as f64 / 1e9);
}
