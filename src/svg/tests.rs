use super::axis::{linear_axis, log_axis};
use super::*;

fn labels(a: &Axis) -> Vec<&str> {
    a.ticks.iter().map(|t| t.1.as_str()).collect()
}

fn chart(kind: Kind, series: Vec<Series>) -> Chart {
    Chart {
        title: "t <1>".into(),
        x_label: "size".into(),
        y_label: "rate".into(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        kind,
        series,
        x_unit: Quantity::Bytes,
        y_unit: Quantity::Number("MB/s"),
        clip_y: None,
        categories: vec![],
    }
}

fn one(points: Vec<(f64, f64)>) -> Vec<Series> {
    vec![Series {
        label: "a".into(),
        points,
    }]
}

#[test]
fn a_chart_has_its_title_axis_labels_ticks_and_one_mark_per_point() {
    let c = chart(Kind::Line, one(vec![(4096.0, 1.0), (8192.0, 2.0), (16384.0, 4.0)]));
    let s = render(&c).unwrap();
    assert!(s.starts_with("<svg class=\"plot\"") && s.ends_with("</svg>"));
    assert!(s.contains("t &lt;1&gt;"), "escaped");
    assert!(s.contains(">size (bytes, log scale)</text>") && s.contains(">rate (MB/s)</text>"));
    assert_eq!(s.matches("<circle").count(), 3);
    assert!(
        s.contains(">4 KiB</text>") && s.contains(">16 KiB</text>"),
        "powers of two on a log2 axis"
    );
    let empty = Chart { series: vec![], ..c };
    assert!(render(&empty).is_none(), "no data, no plot");
}

#[test]
fn a_slow_cards_speeds_get_ticks_with_the_decimals_their_step_needs() {
    // Kingston's FAT plot read "0, 0.00, 0.00, 0.01".
    let a = linear_axis(Quantity::Number("MB/s"), "write speed", 0.0, 0.0108, true);
    assert_eq!(labels(&a), ["0", "0.002", "0.004", "0.006", "0.008", "0.010", "0.012"]);
    assert_eq!(a.title, "write speed (MB/s)");
    assert_eq!((a.lo, a.hi), (0.0, 0.012), "from zero to a labelled top");
    let a = linear_axis(Quantity::Number("MB/s"), "rate", 0.0, 22.6, true);
    assert_eq!(labels(&a), ["0", "5", "10", "15", "20", "25"]);
}

#[test]
fn byte_axes_tick_at_powers_of_two_in_one_unit() {
    // Offsets read "1.9, 3.8, 5.7 MiB" (1-2-5 steps in bytes).
    let a = linear_axis(Quantity::Bytes, "offset", 0.0, (8 << 20) as f64 - 4096.0, false);
    assert_eq!(labels(&a), ["0", "2", "4", "6", "8"]);
    assert_eq!(a.title, "offset (MiB)");
    let a = linear_axis(Quantity::Bytes, "offset", 0.0, (3 << 20) as f64, true);
    assert_eq!(labels(&a), ["0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0"]);
    let a = linear_axis(Quantity::Bytes, "offset", 0.0, (3u64 << 30) as f64, true);
    assert_eq!(labels(&a), ["0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0"]);
    assert_eq!(a.title, "offset (GiB)");
}

#[test]
fn time_axes_take_the_unit_their_range_needs() {
    let a = linear_axis(Quantity::Ns, "read time", 0.0, 1.81e6, true);
    assert_eq!(labels(&a), ["0", "0.5", "1.0", "1.5", "2.0"]);
    assert_eq!(a.title, "read time (ms)");
    let a = linear_axis(Quantity::Ns, "read time", 0.0, 640e3, true);
    assert_eq!(labels(&a), ["0", "200", "400", "600", "800"]);
    assert_eq!(a.title, "read time (µs)");
    let a = linear_axis(Quantity::Count, "AUs", 1.0, 4.0, false);
    assert_eq!(labels(&a), ["1", "2", "3", "4"], "no half AUs");
}

#[test]
fn tick_labels_differ_for_any_range() {
    let quantities = [Quantity::Number("MB/s"), Quantity::Count, Quantity::Bytes, Quantity::Ns];
    for e in -6..13 {
        for m in [1.0, 1.3, 2.7, 7.9] {
            let hi = m * 10f64.powi(e);
            for (lo, from_zero) in [(0.0, true), (hi * 0.9, false), (hi * 0.999, false)] {
                for q in quantities {
                    let a = linear_axis(q, "v", lo, hi, from_zero);
                    let l = labels(&a);
                    let mut d = l.clone();
                    d.dedup();
                    assert_eq!(d, l, "{q:?} {lo}..{hi}: {l:?}");
                    assert!(l.len() >= 2, "{q:?} {lo}..{hi}: {l:?}");
                }
                for scale in [Scale::Log2, Scale::Log10] {
                    let l: Vec<String> = log_axis(scale, Quantity::Ns, "v", hi.max(1.0), hi.max(1.0) * 3.0)
                        .ticks
                        .into_iter()
                        .map(|t| t.1)
                        .collect();
                    let mut d = l.clone();
                    d.dedup();
                    assert_eq!(d, l);
                }
            }
        }
    }
}

#[test]
fn a_log_axis_is_labelled_from_its_first_tick_to_its_last() {
    // The latency distribution began at an unlabelled 1.8 ms
    // and labelled 10000 and 100000 µs.
    let a = log_axis(Scale::Log10, Quantity::Ns, "latency", 1.8e6, 47e6);
    assert_eq!(labels(&a), ["1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms"]);
    assert_eq!((a.lo, a.hi), (6.0, 50e6f64.log10()), "ends on ticks");
    assert_eq!(a.title, "latency (log scale)");
    let a = log_axis(Scale::Log10, Quantity::Ns, "latency", 900.0, 2e9);
    assert_eq!(
        labels(&a),
        [
            "100 ns", "1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s"
        ]
    );
    let a = log_axis(Scale::Log2, Quantity::Bytes, "boundary", 1024.0, (64 << 20) as f64);
    assert_eq!(labels(&a)[..3], ["1 KiB", "4 KiB", "16 KiB"]);
    assert_eq!(labels(&a).last(), Some(&"64 MiB"));
    let a = log_axis(Scale::Log2, Quantity::Bytes, "size", 4096.0, 4096.0);
    assert_eq!(labels(&a), ["2 KiB", "4 KiB", "8 KiB"], "one value: a tick each side");
}

#[test]
fn an_outlier_is_clipped_at_the_quantile_and_the_plot_says_so() {
    let mut ys = vec![531e3; 2047];
    ys.push(360e6);
    assert_eq!(clip_limit(&ys, 0.999), Some(531e3));
    assert_eq!(clip_limit(&ys[..2047], 0.999), None, "nothing to clip");
    assert_eq!(
        clip_note(0.999, Quantity::Ns, 531e3, &ys),
        "y axis clipped at p99.9 = 531 µs: 1 point above, up to 360 ms (hollow, on the top edge)"
    );
    let points: Vec<(f64, f64)> = ys.iter().enumerate().map(|(i, &y)| (i as f64 * 4096.0, y)).collect();
    let c = Chart {
        x_scale: Scale::Linear,
        y_unit: Quantity::Ns,
        clip_y: Some(0.999),
        ..chart(Kind::Points, one(points))
    };
    let s = render(&c).unwrap();
    assert!(s.contains("class=\"plot-note\"") && s.contains("clipped at p99.9 = 531 µs"));
    assert_eq!(s.matches("clipped\"").count(), 1, "one hollow point");
    let hollow = &s[s.find("clipped\"").unwrap()..];
    assert!(
        hollow[..40].contains("cy=\"34.0\""),
        "on the top edge: {}",
        &hollow[..40]
    );
    assert!(
        s.contains(">rate (µs)</text>") && s.contains(">600</text>"),
        "µs up to 600"
    );
    assert!(!s.contains(">360000</text>"), "not stretched to the outlier");
}

#[test]
fn few_bars_and_a_lone_point_carry_their_values() {
    let c = Chart {
        categories: vec!["AU 0".into(), "control".into()],
        y_unit: Quantity::Ns,
        ..chart(
            Kind::Bars,
            vec![
                Series {
                    label: "AU".into(),
                    points: vec![(0.0, 380.6e6)],
                },
                Series {
                    label: "control".into(),
                    points: vec![(1.0, 10.4e6)],
                },
            ],
        )
    };
    let s = render(&c).unwrap();
    assert!(s.contains(">381 ms</text>") && s.contains(">10.4 ms</text>"));
    // Each bar alone in its category takes the category's whole width.
    assert_eq!(s.matches("width=\"216.8\"").count(), 2, "{s}");
    let lone = chart(Kind::Line, one(vec![(4096.0, 22.63)]));
    assert!(render(&lone).unwrap().contains(">22.6 MB/s</text>"));
}

#[test]
fn values_beside_marks_read_with_three_digits_and_a_unit() {
    assert_eq!(value_label(Quantity::Number("MB/s"), 22.63), "22.6 MB/s");
    assert_eq!(value_label(Quantity::Number("MB/s"), 0.010761), "0.0108 MB/s");
    assert_eq!(value_label(Quantity::Ns, 380_628_497.0), "381 ms");
    assert_eq!(value_label(Quantity::Ns, 531_497.0), "531 µs");
    assert_eq!(value_label(Quantity::Number("%"), 99.9), "99.9%");
    assert_eq!(value_label(Quantity::Bytes, 4194304.0), "4 MiB");
}
