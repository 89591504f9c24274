//! A `life` answer in the HTML report: where its flash writes came from,
//! how its amplification settled pass by pass, how its erases spread over
//! the blocks, and which regions cost most.

use super::{CardLife, Life};
use crate::svg::{Chart, Figure, Kind, Quantity, Scale, Series};
use crate::units::{Iec, years};

fn bars(title: String, y_label: &str, y_unit: Quantity, bars: Vec<(String, f64)>) -> Figure {
    Figure::Chart(Chart {
        title,
        x_label: String::new(),
        y_label: y_label.into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        kind: Kind::Bars,
        categories: bars.iter().map(|b| b.0.clone()).collect(),
        series: vec![Series {
            label: y_label.into(),
            points: bars.iter().enumerate().map(|(i, b)| (i as f64, b.1)).collect(),
        }],
        x_unit: Quantity::Count,
        y_unit,
        clip_y: None,
    })
}

fn causes(l: &CardLife) -> Figure {
    let c = &l.by_cause;
    let all = [
        ("host data", c.host),
        ("AU merges", c.merge),
        ("garbage collection", c.gc),
        ("partial pages", c.partial_page),
        ("wear levelling", c.wear),
    ];
    let title = format!(
        "life: {} written to flash for {} from the host ({})",
        Iec(l.flash_bytes_written),
        Iec(l.host_bytes_written),
        l.card
    );
    bars(
        title,
        "flash written",
        Quantity::Bytes,
        all.iter().map(|(k, v)| (k.to_string(), *v as f64)).collect(),
    )
}

fn settling(l: &CardLife) -> Figure {
    Figure::Chart(Chart {
        title: "life: write amplification, pass by pass over the trace".into(),
        x_label: "pass".into(),
        y_label: "amplification".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        kind: Kind::Line,
        categories: Vec::new(),
        series: vec![Series {
            label: l.card.clone(),
            points: l
                .waf_by_pass
                .iter()
                .enumerate()
                .map(|(i, w)| ((i + 1) as f64, *w))
                .collect(),
        }],
        x_unit: Quantity::Count,
        y_unit: Quantity::Number(""),
        clip_y: None,
    })
}

fn spread(l: &CardLife) -> Figure {
    let title = format!(
        "life: blocks by the erases they took in the reported pass (mean {:.3} over every block)",
        l.erase_count.mean
    );
    let cells = l
        .erase_histogram
        .iter()
        .map(|[e, b]| (format!("{e}"), *b as f64))
        .collect();
    bars(title, "blocks", Quantity::Count, cells)
}

fn regions(l: &CardLife) -> Figure {
    let cells = l
        .costs
        .iter()
        .map(|c| {
            let name = format!("{} at {}-{}", Iec(c.request_bytes), Iec(c.from_byte), Iec(c.to_byte));
            (name, c.share * 100.0)
        })
        .collect();
    bars(
        "life: what costs most (writes by size and region)".into(),
        "share of flash writes",
        Quantity::Number("%"),
        cells,
    )
}

impl Life {
    /// The report's figures: the baseline card's, then a note of the
    /// what-ifs.
    pub fn figures(&self) -> Vec<Figure> {
        let b = &self.baseline;
        let mut out = vec![causes(b)];
        if b.waf_by_pass.len() > 1 {
            out.push(settling(b));
        }
        if !b.erase_histogram.is_empty() {
            out.push(spread(b));
        }
        if !b.costs.is_empty() {
            out.push(regions(b));
        }
        if let Some(y) = &b.years {
            out.push(Figure::Note(format!(
                "life: P10 {}, P50 {}, P90 {} on {}",
                years(y.p10),
                years(y.p50),
                years(y.p90),
                b.card
            )));
        }
        for w in &self.what_if {
            let median = w
                .years
                .map_or("no wear".to_string(), |y| format!("P50 {}", years(y.p50)));
            let waf = w.waf.map_or("-".to_string(), |a| format!("{a:.2}"));
            out.push(Figure::Note(format!(
                "what if {}: amplification {waf}, {median}",
                w.what
            )));
        }
        out
    }
}
