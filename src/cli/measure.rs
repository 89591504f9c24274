//! `align`, `open-au`, `fat`, `scatter`: the characterisation tests of
//! [`crate::measure`], with their tables, one-line verdicts and JSON.

use serde::Serialize;

use super::resolve::{self, Opened};
use super::write::{WriteOpts, open_for_writing, safety_error};
use crate::error::{CliError, CliResult};
use crate::measure::{MeasureError, align, fat, open_au, scatter};
use crate::output::{json, table};
use crate::seam::Target;
use crate::seam::real::{EngineChoice, OpenOptions};
use crate::units::{Iec, duration_ns, mb_per_s, parse_size};

pub(super) fn measure_error(e: MeasureError) -> CliError {
    match e {
        MeasureError::Target(t) => resolve::target_error(t),
        MeasureError::Safety(s) => safety_error(s),
        e @ MeasureError::DoesNotFit { .. } => {
            CliError::usage(e.to_string()).hint("use a larger target or a smaller --max")
        }
        MeasureError::Bad(m) => CliError::usage(m),
    }
}

pub(super) fn read_only(spec: &str, engine: EngineChoice) -> CliResult<Box<dyn Target>> {
    Ok(
        match resolve::open(
            spec,
            OpenOptions {
                write: false,
                exclusive: false,
                engine,
            },
        )? {
            Opened::Real(t) => t,
            Opened::Sim(t) => t,
        },
    )
}

fn size_arg(text: &Option<String>, what: &str) -> CliResult<Option<u64>> {
    text.as_deref()
        .map(|t| parse_size(t).map_err(|e| CliError::usage(format!("bad {what} '{t}': {e}"))))
        .transpose()
}

fn emit<T: Serialize>(command: &str, t: &dyn Target, key: &'static str, value: &T) {
    let mut body = serde_json::Map::new();
    body.insert(key.into(), serde_json::to_value(value).expect("results serialise"));
    json::print(&json::Envelope {
        schema_version: json::SCHEMA_VERSION,
        command,
        target: Some(t.description()),
        device_time_s: Some(t.device_time_ns() as f64 / 1e9),
        body,
    });
}

/// What the card and the kernel say the AU is, for align to compare with.
pub(super) fn references(spec: &str, t: &dyn Target) -> Vec<(String, u64)> {
    let Some(info) = super::info::describe(spec, t) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(m) = &info.mmc {
        if let Some(au) = m.ssr.as_ref().and_then(|s| s.au_size_bytes) {
            out.push(("ssr_au_size".to_string(), au));
        }
        if let Some(p) = m.preferred_erase_size_bytes {
            out.push((
                format!("sysfs preferred_erase_size ({})", m.preferred_erase_size_source),
                p,
            ));
        }
    }
    out
}

pub fn align(spec: &str, engine: EngineChoice, as_json: bool) -> CliResult<()> {
    let mut t = read_only(spec, engine)?;
    let refs = references(spec, t.as_ref());
    let r = align::run(t.as_mut(), &refs).map_err(measure_error)?;
    if as_json {
        emit("align", t.as_ref(), "align", &r);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| {
            vec![
                Iec(row.boundary_bytes).to_string(),
                duration_ns(row.pre_ns),
                duration_ns(row.on_ns),
                duration_ns(row.post_ns),
                duration_ns(row.diff_ns),
                duration_ns(row.diff_spread_ns),
                row.samples.to_string(),
            ]
        })
        .collect();
    crate::outln!(
        "{}",
        table::grid(&["boundary", "pre", "on", "post", "diff", "spread", "samples"], &rows)
    );
    for e in &r.evidence {
        crate::outln!("  {e}");
    }
    for x in &r.references {
        let verdict = match x.agrees {
            Some(true) => "agrees",
            Some(false) => "differs",
            None => "not compared",
        };
        crate::outln!("  {}: {} ({verdict})", x.source, Iec(x.bytes));
    }
    // The confidence is that of the verdict, "none visible" included.
    let show = |what: &str, v: Option<u64>, p: f64| match v {
        Some(b) => format!("{what} {} (confidence {p:.2})", Iec(b)),
        None => format!("no {what} step visible (confidence {p:.2})"),
    };
    crate::outln!(
        "{}, {}; {:.1} device-seconds",
        show("erase block", r.erase_size_bytes, r.confidence),
        show("page", r.page_size_bytes, r.page_confidence),
        t.device_time_ns() as f64 / 1e9
    );
    Ok(())
}

/// What the writing tests need to know about the target.
pub(super) struct Geometry {
    pub erase: u64,
    pub page: Option<u64>,
    /// Logical block size.
    pub block: u64,
    pub size: u64,
}

/// Erase size and page: given, or estimated by align (read-only) first.
fn geometry(spec: &str, engine: EngineChoice, erase: Option<u64>) -> CliResult<Geometry> {
    let mut t = read_only(spec, engine)?;
    let block = u64::from(t.description().logical_block_size);
    let size = t.description().size_bytes;
    if let Some(erase) = erase {
        return Ok(Geometry {
            erase,
            page: None,
            block,
            size,
        });
    }
    let a = align::run(t.as_mut(), &[]).map_err(measure_error)?;
    match a.erase_size_bytes {
        Some(erase) => {
            crate::errln!(
                "erase size {} from align (confidence {:.2}); --erase-size overrides it",
                Iec(erase),
                a.confidence
            );
            Ok(Geometry {
                erase,
                page: a.page_size_bytes,
                block,
                size,
            })
        }
        None => Err(CliError::usage("align could not see the erase size of this target")
            .hint("give it with --erase-size SIZE (for example 4M)")),
    }
}

/// A writing test on the declared ranges: consent and in-use checks, the
/// journal, the test (handed only the preserving target), then the restore,
/// which runs even when the test failed.
fn preserving<T>(
    spec: &str,
    ranges: Vec<crate::safety::ranges::Range>,
    opts: &WriteOpts,
    engine: EngineChoice,
    test: impl FnOnce(&mut dyn Target) -> Result<T, MeasureError>,
) -> CliResult<(Box<dyn Target>, T)> {
    let mut s = open_for_writing(spec, ranges, opts, engine)?;
    // Ctrl-C stops the test before its next write; the restore below runs.
    crate::safety::signals::install();
    let result = test(&mut s.target);
    let (target, outcome) = s.target.finish();
    drop(s.claim);
    let outcome = outcome.map_err(safety_error)?;
    match result {
        Err(MeasureError::Target(crate::seam::TargetError::Interrupted { signal })) => {
            super::write::report_interrupted(signal, &outcome);
            Err(super::write::interrupted_error(signal))
        }
        r => {
            if outcome.preserved {
                crate::errln!(
                    "wrote {} in {} of {} declared range(s); restored and verified {}; journal deleted",
                    Iec(outcome.bytes_written),
                    outcome.ranges_touched,
                    outcome.ranges.len(),
                    Iec(outcome.bytes_restored)
                );
            }
            Ok((target, r.map_err(measure_error)?))
        }
    }
}

/// flashbench users sweep up to a few dozen; the most any seed reports is 20
/// (seed 003's SanDisk part).
const DEFAULT_MAX_OPEN_AUS: u64 = 32;
/// Leading AUs the FAT test examines: a FAT area is a few AUs at the start,
/// where the filesystem's metadata lives (seed 004's --find-fat looks at 6).
pub const DEFAULT_FAT_AUS: u64 = 8;

pub struct OpenAuArgs {
    pub erase: Option<String>,
    pub chunk: Option<String>,
    pub max: Option<u64>,
    pub random_only: bool,
    pub linear_only: bool,
    pub full: bool,
}

/// The open-au sweep on `g`, through the preserving write path.
pub(super) fn run_open_au(
    spec: &str,
    g: &Geometry,
    a: &OpenAuArgs,
    opts: &WriteOpts,
    engine: EngineChoice,
) -> CliResult<(Box<dyn Target>, open_au::OpenAuResult)> {
    let chunk = size_arg(&a.chunk, "--chunk")?.unwrap_or_else(|| open_au::default_chunk(g.erase, g.page, g.block));
    let mut o = open_au::Options {
        erase: g.erase,
        chunk,
        max: a.max.unwrap_or(DEFAULT_MAX_OPEN_AUS),
        linear: !a.random_only,
        random: !a.linear_only,
        full: a.full,
    };
    if a.max.is_none() {
        // A small card gets the largest sweep that fits instead of a refusal.
        o.max = open_au::largest_max(g.size, &o).max(1);
    }
    let size = g.size;
    let ranges = open_au::plan(size, &o).map_err(|e| match e {
        MeasureError::DoesNotFit { .. } => CliError::usage(e.to_string()).hint(format!(
            "the largest --max that fits is {}",
            open_au::largest_max(size, &o)
        )),
        e => measure_error(e),
    })?;
    preserving(spec, ranges, opts, engine, |t| open_au::run(t, o))
}

pub fn open_au(spec: &str, a: &OpenAuArgs, opts: &WriteOpts, engine: EngineChoice, as_json: bool) -> CliResult<()> {
    let g = geometry(spec, engine, size_arg(&a.erase, "--erase-size")?)?;
    let (t, r) = run_open_au(spec, &g, a, opts, engine)?;
    let (erase, chunk) = (r.erase_size_bytes, r.chunk_bytes);
    if as_json {
        emit("open-au", t.as_ref(), "open_au", &r);
        return Ok(());
    }
    for (name, sweep) in [("linear", &r.linear), ("random", &r.random)] {
        let Some(sw) = sweep else { continue };
        let rows: Vec<Vec<String>> = sw
            .runs
            .iter()
            .flat_map(|run| {
                run.levels.iter().map(move |l| {
                    vec![
                        run.open_aus.to_string(),
                        Iec(l.chunk_bytes).to_string(),
                        mb_per_s(l.bytes_per_sec),
                        l.writes.to_string(),
                        // Per level: a run stops early only at the chunk sizes
                        // where it collapsed.
                        if (l.writes as u64) < run.open_aus * erase / l.chunk_bytes {
                            "stopped early".into()
                        } else if l.collapsed {
                            "collapsed".into()
                        } else {
                            String::new()
                        },
                    ]
                })
            })
            .collect();
        crate::outln!("{name}:");
        crate::outln!("{}", table::grid(&["open AUs", "chunk", "rate", "writes", ""], &rows));
        match sw.max_open_aus {
            Some(n) => crate::outln!("{name}: {n} open AUs (writes collapse at {})", n + 1),
            None => crate::outln!("{name}: no collapse up to {} open AUs", sw.tried_up_to),
        }
    }
    for n in &r.notes {
        crate::outln!("note: {n}");
    }
    crate::outln!(
        "erase size {}, chunk {}; {:.1} device-seconds",
        Iec(erase),
        Iec(chunk),
        t.device_time_ns() as f64 / 1e9
    );
    Ok(())
}

/// The FAT-area test on `g`'s first `max` AUs, through the preserving path.
pub(super) fn run_fat(
    spec: &str,
    g: &Geometry,
    max: u64,
    opts: &WriteOpts,
    engine: EngineChoice,
) -> CliResult<(Box<dyn Target>, fat::FatResult)> {
    let o = fat::Options {
        erase: g.erase,
        chunk: fat::default_chunk(g.erase, g.page, g.block),
        max_aus: max,
    };
    let ranges = fat::plan(g.size, &o).map_err(measure_error)?;
    preserving(spec, ranges, opts, engine, |t| fat::run(t, o))
}

pub fn fat(
    spec: &str,
    erase: &Option<String>,
    max: u64,
    opts: &WriteOpts,
    engine: EngineChoice,
    as_json: bool,
) -> CliResult<()> {
    let g = geometry(spec, engine, size_arg(erase, "--erase-size")?)?;
    let (t, r) = run_fat(spec, &g, max, opts, engine)?;
    let erase = g.erase;
    if as_json {
        emit("fat", t.as_ref(), "fat", &r);
        return Ok(());
    }
    let mut rows: Vec<Vec<String>> = r
        .aus
        .iter()
        .map(|a| {
            vec![
                a.au.to_string(),
                duration_ns(a.median_ns),
                mb_per_s(a.bytes_per_sec),
                if a.fast { "FAT area".into() } else { String::new() },
            ]
        })
        .collect();
    rows.push(vec![
        format!("{} (reference)", r.reference_au),
        duration_ns(r.reference_median_ns),
        mb_per_s(r.chunk_bytes as f64 * 1e9 / r.reference_median_ns.max(1.0)),
        String::new(),
    ]);
    crate::outln!("{}", table::grid(&["AU", "median write", "rate", ""], &rows));
    crate::outln!(
        "FAT-optimised area: {} AU(s) of {}; {:.1} device-seconds",
        r.fat_area_aus,
        Iec(erase),
        t.device_time_ns() as f64 / 1e9
    );
    Ok(())
}

pub fn scatter(
    spec: &str,
    offset: &str,
    length: &str,
    block: &Option<String>,
    csv: bool,
    engine: EngineChoice,
    as_json: bool,
) -> CliResult<()> {
    let mut t = read_only(spec, engine)?;
    let offset = parse_size(offset).map_err(|e| CliError::usage(format!("bad --offset '{offset}': {e}")))?;
    let length = parse_size(length).map_err(|e| CliError::usage(format!("bad --length '{length}': {e}")))?;
    let block = size_arg(block, "--block")?.unwrap_or_else(|| u64::from(t.description().logical_block_size).max(4096));
    let r = scatter::run(t.as_mut(), offset, length, block).map_err(measure_error)?;
    if as_json {
        emit("scatter", t.as_ref(), "scatter", &r);
    } else if csv {
        crate::out!("{}", scatter::csv(&r));
    } else {
        let lat: Vec<f64> = r.points.iter().map(|p| p.latency_ns as f64).collect();
        let max = r.points.iter().max_by_key(|p| p.latency_ns).map_or(0, |p| p.offset);
        crate::outln!(
            "{} reads of {} from {}: median {}, max {} at byte {max}; --csv or --json for every point",
            r.points.len(),
            Iec(block),
            offset,
            duration_ns(crate::measure::median(&lat)),
            duration_ns(lat.iter().copied().fold(0.0, f64::max))
        );
    }
    Ok(())
}
