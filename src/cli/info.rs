//! `flashlab info [TARGET]`: identification, read-only.

use serde::Serialize;

use super::resolve::{self, Opened};
use crate::device::mmc::{MmcInfo, MmcRaw, kernel_preferred_erase};
use crate::device::sysfs::Host;
use crate::device::{self, DeviceInfo};
use crate::error::{CliError, CliResult};
use crate::output::{json, table};
use crate::seam::Target;
use crate::seam::real::{EngineChoice, OpenOptions};
use crate::sim::SimTarget;
use crate::units::Iec;

#[derive(Serialize)]
struct Body<'a> {
    info: &'a DeviceInfo,
}

pub fn run(spec: &str, engine: EngineChoice, as_json: bool) -> CliResult<()> {
    let opened = resolve::open(
        spec,
        OpenOptions {
            write: false,
            exclusive: false,
            engine,
        },
    )?;
    let (desc, info) = match opened {
        Opened::Real(t) => {
            let d = t.description().clone();
            let path = std::path::Path::new(spec);
            let mut info = device::identify(
                &Host::system(),
                path,
                d.size_bytes,
                d.logical_block_size,
                d.physical_block_size,
            )
            .map_err(|e| {
                CliError::usage(e.to_string())
                    .hint("sysfs looks unusual for this device; please report it with `ls -lR /sys/dev/block/`")
            })?;
            if !t.direct {
                info.notes
                    .push("the filesystem refused O_DIRECT; reads of this file go through the page cache".into());
            }
            (d, info)
        }
        Opened::Sim(t) => {
            let d = t.description().clone();
            (d.clone(), sim_info(&t, &d))
        }
    };
    if as_json {
        json::print(&json::Envelope {
            schema_version: json::SCHEMA_VERSION,
            command: "info",
            target: Some(&desc),
            device_time_s: Some(0.0),
            body: Body { info: &info },
        });
    } else {
        print_text(&info);
    }
    Ok(())
}

/// The identification of a target (registers, sysfs), for tests that compare
/// with it; None when it cannot be read.
pub(super) fn describe(spec: &str, t: &dyn Target) -> Option<DeviceInfo> {
    let d = t.description();
    match resolve::open(spec, OpenOptions::default()).ok()? {
        Opened::Real(_) => device::identify(
            &Host::system(),
            std::path::Path::new(spec),
            d.size_bytes,
            d.logical_block_size,
            d.physical_block_size,
        )
        .ok(),
        Opened::Sim(s) => Some(sim_info(&s, d)),
    }
}

/// What `info` shows for a simulated card: its geometry, and its registers
/// decoded exactly as a real card's sysfs would be.
fn sim_info(t: &SimTarget, d: &crate::seam::TargetDescription) -> DeviceInfo {
    let p = &t.params;
    let mut info = DeviceInfo::new(
        &d.spec,
        d.size_bytes,
        u64::from(d.logical_block_size),
        u64::from(d.physical_block_size),
        "sim",
    );
    info.model = Some(
        d.spec
            .trim_start_matches("sim:")
            .split(',')
            .next()
            .unwrap_or_default()
            .to_string(),
    );
    info.vendor = Some("flashlab simulator".into());
    info.rotational = Some(false);
    let ftl = if p.page_mapped {
        "page-mapped FTL (no open-AU limit)".to_string()
    } else {
        format!("{} open AUs in order / {} random", p.open_aus_linear, p.open_aus_random)
    };
    info.notes.push(format!(
        "simulated card: {} AU, {} page, {ftl}, host {}",
        Iec(p.au_size),
        Iec(p.page_size),
        p.host
    ));
    if p.card_type != "CF" {
        let reg = |h: &Option<String>, n: usize| {
            h.as_deref()
                .and_then(|h| crate::registers::hex::parse_register(h, "register", n).ok())
        };
        let ssr: Option<[u8; 64]> = reg(&p.ssr, 64).and_then(|b| b.try_into().ok());
        let sector = u64::from(p.sector_size);
        let raw = MmcRaw {
            card_type: p.card_type.clone(),
            cid: reg(&p.cid, 16).and_then(|b| b.try_into().ok()),
            csd: reg(&p.csd, 16).and_then(|b| b.try_into().ok()),
            scr: reg(&p.scr, 8).and_then(|b| b.try_into().ok()),
            ssr,
            erase_size_bytes: Some(sector),
            preferred_erase_size_bytes: Some(kernel_preferred_erase(ssr.as_ref(), p.capacity, sector)),
            date: None,
        };
        if raw.cid.is_some() || raw.csd.is_some() {
            info.mmc = Some(MmcInfo::from_raw(raw, p.capacity));
        }
    }
    info
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("-".into(), ToString::to_string)
}

fn print_text(i: &DeviceInfo) {
    let hint = i
        .capacity_hint
        .map(|h| {
            format!(
                " = 2^{} x {} (tiles with erase blocks up to {})",
                h.exponent,
                h.odd_part,
                Iec(h.largest_power_of_two_bytes)
            )
        })
        .unwrap_or_default();
    let mut rows: Vec<(String, String)> = vec![
        ("path".into(), i.path.clone()),
        ("transport".into(), i.transport.clone()),
        ("size".into(), format!("{} bytes ({}){hint}", i.size_bytes, i.size_iec)),
        (
            "logical / physical block".into(),
            format!("{} / {} bytes", i.logical_block_size, i.physical_block_size),
        ),
        (
            "minimum / optimal I/O".into(),
            format!("{} / {}", opt(&i.minimum_io_size), opt(&i.optimal_io_size)),
        ),
        ("discard granularity".into(), opt(&i.discard_granularity)),
        ("rotational".into(), opt(&i.rotational)),
        ("read-only".into(), i.read_only.to_string()),
        ("model".into(), opt(&i.model)),
        ("vendor".into(), opt(&i.vendor)),
        ("serial".into(), opt(&i.serial)),
        ("firmware".into(), opt(&i.firmware)),
    ];
    if let Some(p) = &i.parent {
        rows.push(("partition of".into(), p.clone()));
    }
    if let Some(b) = &i.loop_backing_file {
        rows.push(("loop backing file".into(), b.clone()));
    }
    for p in &i.partitions {
        rows.push((
            format!("partition {}", p.name),
            format!(
                "start {} ({}), size {}",
                p.start_bytes,
                Iec(p.start_bytes),
                Iec(p.size_bytes)
            ),
        ));
    }
    for m in &i.mounts {
        rows.push((
            "mounted".into(),
            format!("{} on {} ({})", m.source, m.mount_point, m.fstype),
        ));
    }
    for s in &i.swaps {
        rows.push(("swap".into(), s.clone()));
    }
    if !i.holders.is_empty() {
        rows.push(("holders".into(), i.holders.join(", ")));
    }
    for a in &i.aliases {
        rows.push(("same bytes as".into(), a.clone()));
    }
    rows.push((
        "in use".into(),
        if i.in_use {
            format!("yes: {}; writing tests will refuse it", i.in_use_by.join("; "))
        } else {
            "no".into()
        },
    ));
    crate::outln!("{}", table::key_values(&rows));
    if let Some(mmc) = &i.mmc {
        crate::outln!("\n{} card registers", mmc.card_type);
        crate::outln!(
            "{}",
            table::json_fields(&serde_json::to_value(mmc).expect("serialisable"))
        );
    }
    for n in &i.notes {
        crate::outln!("note: {n}");
    }
}
