//! `info`: the device, its block layer and its registers.

use std::fmt::Write;

use crate::device::DeviceInfo;
use crate::render::table;
use crate::units::Iec;

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("-".into(), ToString::to_string)
}

pub fn info(o: &mut String, i: &DeviceInfo) {
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
    let _ = writeln!(o, "{}", table::key_values(&rows));
    if let Some(mmc) = &i.mmc {
        let _ = writeln!(o, "\n{} card registers", mmc.card_type);
        if let Ok(v) = serde_json::to_value(mmc) {
            let _ = writeln!(o, "{}", table::json_fields(&v));
        }
    }
    for n in &i.notes {
        let _ = writeln!(o, "note: {n}");
    }
}
