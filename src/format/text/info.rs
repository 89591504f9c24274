//! `info`: the device, its block layer and its registers.

use std::fmt::Write;

use crate::console::table;
use crate::identify::mmc::MmcInfo;
use crate::identify::{DeviceInfo, Transport};
use crate::units::Iec;

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("-".into(), ToString::to_string)
}

/// A byte count the block layer reports, with its unit; 0 is how the
/// kernel says "not reported" (optimal_io_size of most disks).
fn io_bytes(v: Option<u64>) -> String {
    match v {
        None => "-".into(),
        Some(0) => "not reported".into(),
        Some(b) if b < 1024 => format!("{b} bytes"),
        Some(b) => format!("{b} bytes ({})", Iec(b)),
    }
}

/// The kernel's rotational flag, and what it is worth: a loop device
/// and many USB card readers report a disk whatever the medium.
fn rotational(v: Option<bool>, transport: Transport) -> String {
    match (v, transport) {
        (None, _) => "-".into(),
        (Some(_), Transport::Sim) => "no (a simulated card)".into(),
        (Some(r), Transport::Loop) => format!(
            "{} (the kernel's queue flag; a loop device says nothing of its medium)",
            if r { "yes" } else { "no" }
        ),
        (Some(true), _) => "yes (the kernel's queue flag: a disk, or a reader that does not say)".into(),
        (Some(false), _) => "no (the kernel's queue flag: solid-state)".into(),
    }
}

/// The card in one paragraph: who made it, when, what it says of itself.
fn card_summary(i: &DeviceInfo) -> Option<String> {
    let m = i.mmc.as_ref()?;
    let mut parts = Vec::new();
    if let Some(c) = &m.cid {
        let maker = c
            .manufacturer_name
            .clone()
            .unwrap_or_else(|| format!("manufacturer 0x{:02x}", c.manufacturer_id));
        parts.push(format!(
            "{} card {maker} {} rev {}, serial {}, made {}-{:02}",
            m.card_type, c.product_name, c.product_revision, c.serial_hex, c.manufacture_year, c.manufacture_month
        ));
    } else {
        parts.push(format!("{} card (no CID)", m.card_type));
    }
    if let Some(au) = m.ssr.as_ref().and_then(|s| s.au_size_bytes) {
        parts.push(format!("AU {} (the card's SSR)", Iec(au)));
    }
    if let Some(p) = m.preferred_erase_size_bytes {
        parts.push(format!(
            "kernel erase size {} ({})",
            Iec(p),
            m.erase_size_source_words()
        ));
    }
    Some(parts.join("; "))
}

/// The block layer's serial, or the card's CID serial where the kernel
/// gives none (the summary line above shows the CID's: the two must not
/// seem to disagree).
fn serial(i: &DeviceInfo) -> String {
    match (&i.reported.serial, i.mmc.as_ref().and_then(|m| m.cid.as_ref())) {
        (Some(s), _) => s.clone(),
        (None, Some(c)) => format!("{} (the card's CID)", c.serial_hex),
        (None, None) => "-".into(),
    }
}

/// The summary and the notes that matter first, then the block layer;
/// every register field only with `detail` (`info --registers`).
pub fn info(o: &mut String, i: &DeviceInfo, detail: bool) {
    heading(o, i);
    let mut rows = block_layer(i);
    rows.extend(users(i));
    let _ = writeln!(o, "{}", table::key_values(&rows));
    if let Some(mmc) = &i.mmc {
        registers(o, mmc, detail);
    }
}

/// The device in a line (path, name, size, transport, whether in use),
/// the card's own summary and the notes: what a reader needs before the
/// table, so it comes first and apart from it.
fn heading(o: &mut String, i: &DeviceInfo) {
    let name = [i.reported.vendor.as_deref(), i.reported.model.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let _ = writeln!(
        o,
        "{}: {}{} ({}){}",
        i.path,
        if name.is_empty() {
            String::new()
        } else {
            format!("{name}, ")
        },
        i.size_iec,
        i.transport,
        if i.in_use {
            "; IN USE: writing tests will refuse it"
        } else {
            ""
        }
    );
    if let Some(c) = card_summary(i) {
        let _ = writeln!(o, "{}", super::wrap(&c, "  ", "  "));
    }
    for n in &i.notes {
        let _ = writeln!(o, "{}", super::wrap(n, "note: ", "      "));
    }
    let _ = writeln!(o);
}

/// The table's rows for what the block layer says of the device: sizes,
/// flags and names. A step of its own because every device has each of
/// these rows, where the rows after them come and go.
fn block_layer(i: &DeviceInfo) -> Vec<(String, String)> {
    let hint = i
        .capacity_hint
        .map(|h| {
            format!(
                " = 2^{} x {} (a whole number of {} blocks; a larger erase block leaves a partial one at the end)",
                h.exponent,
                h.odd_part,
                Iec(h.largest_power_of_two_bytes)
            )
        })
        .unwrap_or_default();
    vec![
        ("path".into(), i.path.clone()),
        ("transport".into(), i.transport.to_string()),
        ("size".into(), format!("{} bytes ({}){hint}", i.size_bytes, i.size_iec)),
        (
            "logical / physical block".into(),
            format!("{} / {} bytes", i.logical_block_size, i.physical_block_size),
        ),
        (
            "minimum / optimal I/O".into(),
            format!(
                "{} / {}",
                io_bytes(i.reported.minimum_io_size),
                io_bytes(i.reported.optimal_io_size)
            ),
        ),
        ("discard granularity".into(), io_bytes(i.reported.discard_granularity)),
        ("rotational".into(), rotational(i.reported.rotational, i.transport)),
        (
            "read-only".into(),
            if i.reported.read_only { "yes" } else { "no" }.into(),
        ),
        ("model".into(), opt(&i.reported.model)),
        ("vendor".into(), opt(&i.reported.vendor)),
        ("serial".into(), serial(i)),
        ("firmware".into(), opt(&i.reported.firmware)),
    ]
}

/// The table's rows for what sits on and around the device: what it is
/// part of, its partitions, mounts, swaps, holders and aliases, then
/// whether it is in use. A step of its own because these decide whether
/// a writing test may run on it.
fn users(i: &DeviceInfo) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    if let Some(p) = &i.related.parent {
        rows.push(("partition of".into(), p.clone()));
    }
    if let Some(b) = &i.related.loop_backing_file {
        rows.push(("loop backing file".into(), b.clone()));
    }
    for p in &i.related.partitions {
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
    for m in &i.related.mounts {
        rows.push((
            "mounted".into(),
            format!("{} on {} ({})", m.source, m.mount_point, m.fstype),
        ));
    }
    for s in &i.related.swaps {
        rows.push(("swap".into(), s.clone()));
    }
    if !i.related.holders.is_empty() {
        rows.push(("holders".into(), i.related.holders.join(", ")));
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
    rows
}

/// The card's registers after the table: every field with `detail`, else
/// which were decoded and how to see them. Last and apart, because only
/// an SD/MMC card has them.
fn registers(o: &mut String, mmc: &MmcInfo, detail: bool) {
    if detail {
        let _ = writeln!(o, "\n{} card registers", mmc.card_type);
        if let Ok(v) = serde_json::to_value(mmc) {
            let _ = writeln!(o, "{}", table::json_fields(&v));
        }
    } else {
        let present: Vec<&str> = [
            ("CID", mmc.cid.is_some()),
            ("CSD", mmc.csd.is_some()),
            ("SCR", mmc.scr.is_some()),
            ("SSR", mmc.ssr.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, p)| p.then_some(n))
        .collect();
        let line = format!(
            "{} card registers decoded ({}): `flashlab info --registers` lists every field",
            mmc.card_type,
            present.join(", ")
        );
        let _ = writeln!(o, "{}", super::wrap(&line, "", ""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_of(i: &DeviceInfo) -> String {
        let mut o = String::new();
        info(&mut o, i, false);
        o
    }

    #[test]
    fn sizes_have_units_flags_say_what_they_are_worth_and_the_serial_agrees() {
        let mut i = DeviceInfo::new("/dev/loop7", 64 << 20, 512, 512, Transport::Loop);
        i.reported.minimum_io_size = Some(512);
        i.reported.optimal_io_size = Some(0);
        i.reported.discard_granularity = Some(4096);
        i.reported.rotational = Some(true);
        let o = table_of(&i);
        assert!(o.contains("512 bytes / not reported"), "{o}");
        assert!(o.contains("4096 bytes (4 KiB)"), "{o}");
        assert!(o.contains("yes (the kernel's queue flag; a loop device says"), "{o}");
        // The simulated card: the CID's serial in the table as in the line above it.
        let sim = crate::sim::SimTarget::from_spec("sim:demo").unwrap().device_info();
        let o = table_of(&sim);
        assert!(o.contains("serial 0xa1b2c3d4"), "{o}");
        assert!(o.contains("0xa1b2c3d4 (the card's CID)"), "{o}");
        assert!(o.contains("kernel erase size 4 MiB (from the card's SSR)"), "{o}");
        assert!(!o.contains("ssr_au"), "{o}");
        assert!(o.lines().all(|l| l.chars().count() <= 80), "{o}");
    }
}
