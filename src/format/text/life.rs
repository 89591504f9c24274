//! `life`: the trace, then the first card's answer on one screen (what it
//! wrote to flash and why, its wear, its years, its latency, what costs
//! most), then each what-if and other card as one line beside it.

use std::fmt::Write;

use crate::console::wrap;
use crate::measure::life::{CardLife, Life, Quantiles, Start, TraceSummary, WhatIf};
use crate::units::{Iec, count, duration_ns, years};

const HEAD: usize = 13;

fn line(o: &mut String, label: &str, text: &str) {
    let head = format!("  {label:<w$}", w = HEAD - 2);
    let _ = writeln!(o, "{}", wrap(text, &head, &" ".repeat(HEAD)));
}

fn bytes(n: f64) -> String {
    Iec(n.max(0.0) as u64).to_string()
}

fn trace(o: &mut String, t: &TraceSummary) {
    let text = format!(
        "{}: {} over {}: {} ({}), {} ({}), {} ({}), {}",
        t.format,
        count(t.requests, "request", "requests"),
        duration_ns(t.span_s * 1e9),
        count(t.writes, "write", "writes"),
        Iec(t.host_bytes_written),
        count(t.reads, "read", "reads"),
        Iec(t.host_bytes_read),
        count(t.discards, "discard", "discards"),
        Iec(t.host_bytes_discarded),
        count(t.flushes, "flush", "flushes")
    );
    line(o, "trace", &text);
    if let Some(cut) = &t.truncated {
        line(o, "", &format!("cut short ({cut}): read up to its last whole record"));
    }
    if let Some(out) = &t.left_out {
        line(o, "", out);
    }
    if let Some(back) = &t.times_back {
        line(
            o,
            "",
            &format!("times go back at {back}: each is taken at the time of the record before it"),
        );
    }
}

fn life_span(q: &Quantiles) -> String {
    format!("P10 {}, P50 {}, P90 {}", years(q.p10), years(q.p50), years(q.p90))
}

fn card(o: &mut String, l: &CardLife) {
    let replay = match (l.start, l.settled) {
        (Start::Fresh, _) => "a new card, the trace once".to_string(),
        (Start::Steady, true) => format!(
            "steady state: the trace's footprint written, then {} passes until amplification settled within 1%",
            l.passes
        ),
        (Start::Steady, false) => format!(
            "NOT settled after {} passes: the figures are the last pass's, and still moving",
            l.passes
        ),
    };
    line(o, "replay", &replay);
    let waf = l.waf.map_or("none (nothing written)".into(), |w| format!("{w:.2}"));
    line(
        o,
        "flash",
        &format!(
            "{} written for {} from the host: amplification {waf}",
            Iec(l.flash_bytes_written),
            Iec(l.host_bytes_written)
        ),
    );
    let c = &l.by_cause;
    let mut causes = vec![
        format!("host data {}", Iec(c.host)),
        format!("AU merges {}", Iec(c.merge)),
    ];
    for (n, what) in [
        (c.gc, "garbage collection"),
        (c.partial_page, "partial pages"),
        (c.wear, "wear levelling"),
    ] {
        if n > 0 {
            causes.push(format!("{what} {}", Iec(n)));
        }
    }
    line(o, "", &causes.join(", "));
    let per_day = l.per_day.map_or(String::new(), |d| format!(" ({:.0} a day)", d.erases));
    line(
        o,
        "erases",
        &format!(
            "{}{per_day}; per block mean {:.3}, most {}",
            l.erases, l.erase_count.mean, l.erase_count.max
        ),
    );
    if let Some(d) = l.per_day {
        line(
            o,
            "per day",
            &format!(
                "{} from the host, {} to flash",
                bytes(d.host_bytes),
                bytes(d.flash_bytes)
            ),
        );
    }
    let pe = &l.pe_cycles;
    let cycles = if pe.p10 == pe.p90 {
        format!("{:.0} erase cycles a block", pe.p50)
    } else {
        format!("{:.0}/{:.0}/{:.0} erase cycles a block", pe.p10, pe.p50, pe.p90)
    };
    let life = match &l.years {
        Some(y) => format!("{} ({cycles})", life_span(y)),
        None => "no wear measured: the pass erased nothing, or the trace spans no time".into(),
    };
    line(o, "life", &life);
    let by = &l.years_p50_by_wear_leveling;
    if let (Some(none), Some(dynamic), Some(r#static)) = (by.none, by.dynamic, by.r#static) {
        let text = format!(
            "P50 {} levelling no wear, {} dynamic, {} static (this model: {}); no card says which it does",
            years(none),
            years(dynamic),
            years(r#static),
            l.wear_leveling
        );
        line(o, "", &text);
    }
    let lat = &l.latency_ns;
    line(
        o,
        "latency",
        &format!(
            "p50 {}, p99 {}, max {}; {} behind merges",
            duration_ns(lat.p50 as f64),
            duration_ns(lat.p99 as f64),
            duration_ns(lat.max as f64),
            duration_ns(l.stall_s * 1e9)
        ),
    );
    for (i, cost) in l.costs.iter().enumerate() {
        let text = format!(
            "{} writes at {}-{}: {:.0}% of flash writes",
            Iec(cost.request_bytes),
            Iec(cost.from_byte),
            Iec(cost.to_byte),
            cost.share * 100.0
        );
        line(o, if i == 0 { "costs most" } else { "" }, &text);
    }
}

fn what_if(o: &mut String, w: &WhatIf, first: bool) {
    let label = if first { "what if" } else { "" };
    let text = match (&w.error, w.waf) {
        (Some(e), _) => format!("{}: not possible: {e}", w.what),
        (None, waf) => {
            let waf = waf.map_or("-".into(), |a| format!("{a:.2}"));
            let years = w.years.map_or("no wear".into(), |y| format!("P50 {}", years(y.p50)));
            let ratio = w.ratio.map_or(String::new(), |r| format!(", {r:.2}x the baseline's"));
            format!("{}: amplification {waf}, {years}{ratio}", w.what)
        }
    };
    line(o, label, &text);
}

pub fn life(o: &mut String, l: &Life) {
    let _ = writeln!(o, "life of {} under this trace", l.baseline.card);
    trace(o, &l.trace);
    card(o, &l.baseline);
    for (i, w) in l.what_if.iter().enumerate() {
        what_if(o, w, i == 0);
    }
}

/// `trace`: what was captured, and what reads it.
pub fn traced(o: &mut String, c: &crate::document::bodies::Captured) {
    let _ = writeln!(
        o,
        "traced {} for {} ({}, stopped by {})",
        c.device,
        duration_ns(c.seconds * 1e9),
        c.how,
        c.stopped_by
    );
    line(o, "issued", &c.counts.to_string());
    line(o, "files", &c.files.join(" "));
    if let Some(first) = c.files.first() {
        line(
            o,
            "next",
            &format!("flashlab life {} --card sim:PROFILE", crate::console::shell_word(first)),
        );
    }
}
