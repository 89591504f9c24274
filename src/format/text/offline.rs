//! `sim list`, `sim show`, `sim reproduce`, `decode` and `restore`'s listing.

use std::fmt::Write;

use crate::console::table;
use crate::document::bodies::{DecodeBody, Described, Pending, PendingList, SimList, SimShow};
use crate::sim::params::KEYS;
use crate::sim::reproduce::Report;
use crate::units::Iec;

/// Names and what each is, one entry a line (36 lines with summaries
/// wrapped scrolled the first cards off 80x24); where each comes from is
/// `sim show NAME`'s first lines and the JSON's (96 lines with the sources
/// in a third column).
pub fn sim_list(o: &mut String, l: &SimList) {
    let list = |o: &mut String, v: &[Described]| {
        let name = v.iter().map(|e| e.name.len()).max().unwrap_or(0);
        for e in v {
            let head = format!("  {:<name$}  ", e.name);
            let _ = writeln!(
                o,
                "{}",
                crate::console::wrap(&e.summary, &head, &" ".repeat(head.len()))
            );
        }
    };
    let _ = writeln!(o, "Cards (use as sim:NAME):");
    list(o, &l.profiles);
    let _ = writeln!(o, "\nHost presets (use as sim:NAME,host=PRESET):");
    list(o, &l.hosts);
    let _ = writeln!(
        o,
        "\n{}",
        crate::console::wrap(
            "`flashlab sim show NAME` gives a card's parameters and its source.",
            "",
            ""
        )
    );
}

/// One line a key: name, value and unit; the meanings are the comments
/// of `--toml` (179 lines with a meaning column).
pub fn sim_show(o: &mut String, s: &SimShow) {
    if let (Some(summary), Some(source)) = (&s.summary, &s.source) {
        // A spec that changes keys changes what the profile's summary says
        // (sim:demo,au_size=1M is no "4 MiB AU" card): the summary is
        // then the built-in card's, and the values below are this one's.
        let head = match s.profile.split_once(',') {
            Some((base, _)) => {
                let _ = writeln!(o, "{}", s.profile);
                format!("  changes {base}, built in as ")
            }
            None => format!("{}: ", s.profile),
        };
        let _ = writeln!(o, "{}", crate::console::wrap(summary, &head, "  "));
        let _ = writeln!(o, "{}\n", crate::console::wrap(source, "source: ", "  "));
    }
    let width = KEYS.iter().map(|k| k.key.len()).max().unwrap_or(0);
    for k in KEYS {
        let v = s.params.get(k.key).map_or(String::new(), |v| match v {
            serde_json::Value::String(t) => format!("\"{t}\""),
            other @ (serde_json::Value::Null
            | serde_json::Value::Bool(_)
            | serde_json::Value::Number(_)
            | serde_json::Value::Array(_)
            | serde_json::Value::Object(_)) => other.to_string(),
        });
        let _ = writeln!(o, "  {:<width$}  {v} {}", k.key, k.unit);
    }
    let _ = writeln!(
        o,
        "\n{}",
        crate::console::wrap(
            &format!(
                "What each key means: `flashlab sim show {} --toml` (a file to edit and give as sim:FILE.toml).",
                crate::console::shell_word(&s.profile)
            ),
            "",
            ""
        )
    );
}

/// Published figures are integers or a few decimals; print them as they came.
fn format_num(v: f64) -> String {
    if v.abs() >= 1000.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A row's conditions split for the table: the heading it goes under (the
/// label up to its last ", ") and what it adds to it with its metric
/// ("kingston-sa04g open-au linear 3 AUs" over "128 KiB write").
fn heading(row: &crate::sim::reproduce::Row) -> (&str, String) {
    match row.label.rsplit_once(", ") {
        Some((head, rest)) => (head, format!("{rest} {}", row.metric)),
        None => (row.label.as_str(), row.metric.clone()),
    }
}

/// One experiment's table: the conditions a heading row over the rows
/// they share, each row one line at 80 columns ("single-sector / read
/// (32 / sectors)" had taken three or four lines a row in a first column
/// of conditions).
fn reproduced(r: &Report) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut last: Option<&str> = None;
    for row in &r.rows {
        let (head, what) = heading(row);
        if last != Some(head) {
            rows.push(vec![
                head.to_string(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
            last = Some(head);
        }
        rows.push(vec![
            format!("  {what}"),
            row.unit.clone(),
            format_num(row.published),
            format_num(row.simulated),
            format!("{:+.1}%", row.error_pct),
        ]);
    }
    table::grid(&["what", "unit", "published", "simulated", "error"], &rows)
}

/// One experiment's table and notes, or several with their total
/// (`total`: cells within 15%, cells, largest error).
pub fn sim_reproduce(o: &mut String, reports: &[Report], total: Option<(usize, usize, f64)>) {
    for r in reports {
        let cells = reproduced(r);
        let _ = writeln!(o, "== {}", r.experiment);
        let _ = writeln!(o, "{cells}");
        let _ = writeln!(
            o,
            "{} of {} cells within 15%; largest error {:.1}%",
            r.within_15_pct,
            r.rows.len(),
            r.max_abs_error_pct
        );
        for n in &r.notes {
            let _ = writeln!(o, "note: {n}");
        }
        let _ = writeln!(o);
    }
    if let Some((within, cells, max)) = total {
        let _ = writeln!(o, "all: {within} of {cells} cells within 15%; largest error {max:.1}%");
    }
}

/// What a person wants of a register first, in units, then its notes,
/// then every field as the specification names it.
pub fn decode(o: &mut String, d: &DecodeBody) {
    use crate::registers::Decoded;
    let _ = writeln!(o, "{} ({} layout)", d.register.to_ascii_uppercase(), d.layout);
    let (headline, notes): (Vec<String>, &[String]) = match &d.decoded {
        Decoded::Csd(c) => (
            [
                c.capacity_bytes.map(|b| format!("capacity {} ({b} bytes)", Iec(b))),
                Some(format!("CSD version {}", c.version)),
                c.erase_unit_bytes.map(|b| format!("erase unit {}", Iec(b))),
                Some(format!(
                    "bus up to {} Mbit/s (TRAN_SPEED)",
                    c.tran_speed_bits_per_sec / 1_000_000
                )),
                Some(format!("read access {} (TAAC)", crate::units::duration_ns(c.taac_ns))),
                Some(format!(
                    "writes {}x slower than reads (R2W_FACTOR)",
                    1u32 << c.r2w_factor.min(7)
                )),
            ]
            .into_iter()
            .flatten()
            .collect(),
            &c.notes,
        ),
        Decoded::Cid(c) => (
            vec![format!(
                "{} {} rev {}, serial {}, made {}-{:02}",
                c.manufacturer_name
                    .clone()
                    .unwrap_or_else(|| format!("manufacturer 0x{:02x}", c.manufacturer_id)),
                c.product_name,
                c.product_revision,
                c.serial_hex,
                c.manufacture_year,
                c.manufacture_month
            )],
            &c.notes,
        ),
        Decoded::Scr(_) | Decoded::Ssr(_) => (Vec::new(), &[]),
    };
    let note = |o: &mut String, n: &String| {
        let _ = writeln!(o, "{}", crate::console::wrap(n, "note: ", "      "));
    };
    // Bytes that are not this register: say so before its nonsense.
    let mistaken = crate::registers::plausible(&d.decoded) == Some(false);
    if mistaken {
        notes.iter().for_each(|n| note(o, n));
    }
    if !headline.is_empty() {
        let _ = writeln!(o, "{}", crate::console::wrap(&headline.join("; "), "  ", "  "));
    }
    if !mistaken {
        notes.iter().for_each(|n| note(o, n));
    }
    let fields = serde_json::to_value(&d.decoded).unwrap_or_default();
    let _ = writeln!(o, "{}", table::json_fields(&fields));
}

pub fn restore(o: &mut String, l: &PendingList) {
    // A restore reports on stderr as it goes; the listing is the text output.
    let (pending, dir) = (&l.pending, &l.journal_dir);
    if pending.is_empty() {
        let _ = writeln!(
            o,
            "no pending journals (looked in {dir} and the register {})",
            l.registry
        );
        return;
    }
    let journals = table::grid_of(&["target", "size", "created", "journalled", "journal"], pending, |p| {
        vec![
            p.target.clone().unwrap_or_else(|| "?".into()),
            // "?" where the journal does not say (a damaged header), as
            // for its target: an empty cell read as nothing journalled.
            p.size_bytes.map_or_else(|| "?".into(), |s| Iec(s).to_string()),
            p.created_unix.map_or_else(|| "?".into(), crate::units::date_time),
            p.bytes.map_or_else(|| "?".into(), |b| Iec(b).to_string()),
            // The error names the journal itself ("journal PATH: why"),
            // under a column that says "journal" already.
            match (
                p.error.as_deref().map(|e| e.strip_prefix("journal ").unwrap_or(e)),
                p.live,
                p.damaged,
            ) {
                (Some(e), _, true) => format!("DAMAGED: {e}"),
                (Some(e), _, false) => e.to_string(),
                (None, true, _) => format!("{} (live: its run is still going)", p.journal),
                (None, false, _) => p.journal.clone(),
            },
        ]
    });
    let _ = writeln!(o, "{journals}");
    let _ = writeln!(
        o,
        "restore one with `flashlab restore JOURNAL` or `flashlab restore TARGET`"
    );
    if pending.iter().any(|p| p.error.is_some()) {
        let aside = Pending::set_aside_command(pending.iter().filter(|p| p.error.is_some()));
        let _ = writeln!(
            o,
            "{}",
            crate::console::wrap(
                &format!("one damaged, or out of reach for good: {aside} (nothing is put back)"),
                "",
                ""
            )
        );
    }
}
