//! `flashlab sim list` and `flashlab sim show PROFILE [--toml]`.

use serde::Serialize;

use super::SimAction;
use super::resolve;
use crate::error::{CliError, CliResult};
use crate::output::{json, table};
use crate::seam::spec::TargetSpec;
use crate::sim::params::KEYS;
use crate::sim::{params_from_spec, profiles, reproduce};

#[derive(Serialize)]
struct Entry {
    name: &'static str,
    summary: &'static str,
    source: &'static str,
}

#[derive(Serialize)]
struct ListBody {
    profiles: Vec<Entry>,
    hosts: Vec<Entry>,
}

#[derive(Serialize)]
struct ShowBody<'a> {
    profile: &'a str,
    summary: Option<&'static str>,
    source: Option<&'static str>,
    params: serde_json::Map<String, serde_json::Value>,
}

pub fn run(action: SimAction, as_json: bool) -> CliResult<()> {
    match action {
        SimAction::List => list(as_json),
        SimAction::Show { profile, toml } => show(&profile, toml, as_json),
        SimAction::Reproduce { experiment } => reproduce(&experiment, as_json),
    }
}

#[derive(Serialize)]
struct ReproduceAll {
    experiments: Vec<reproduce::Report>,
    max_abs_error_pct: f64,
}

fn reproduce(name: &str, as_json: bool) -> CliResult<()> {
    let names: Vec<&str> = if name == "all" {
        reproduce::EXPERIMENTS.iter().map(|e| e.0).collect()
    } else {
        vec![name]
    };
    let mut reports = Vec::new();
    for n in names {
        reports
            .push(reproduce::run(n).map_err(|e| super::usage_err(e, "experiments: at91, hsq, cf, flashbench, all"))?);
    }
    if as_json {
        if reports.len() == 1 {
            json::print(&json::Envelope {
                schema_version: json::SCHEMA_VERSION,
                command: "sim reproduce",
                target: None,
                device_time_s: None,
                body: reports.remove(0),
            });
        } else {
            let max = reports.iter().map(|r| r.max_abs_error_pct).fold(0.0, f64::max);
            json::print(&json::Envelope {
                schema_version: json::SCHEMA_VERSION,
                command: "sim reproduce",
                target: None,
                device_time_s: None,
                body: ReproduceAll {
                    experiments: reports,
                    max_abs_error_pct: max,
                },
            });
        }
        return Ok(());
    }
    for r in &reports {
        let rows: Vec<Vec<String>> = r
            .rows
            .iter()
            .map(|row| {
                vec![
                    row.label.clone(),
                    row.metric.clone(),
                    row.unit.clone(),
                    format_num(row.published),
                    format_num(row.simulated),
                    format!("{:+.1}%", row.error_pct),
                ]
            })
            .collect();
        crate::outln!("== {}", r.experiment);
        crate::outln!(
            "{}",
            table::grid(&["what", "metric", "unit", "published", "simulated", "error"], &rows)
        );
        crate::outln!(
            "{} of {} cells within 15%; largest error {:.1}%",
            r.within_15_pct,
            r.rows.len(),
            r.max_abs_error_pct
        );
        for n in &r.notes {
            crate::outln!("note: {n}");
        }
        crate::outln!();
    }
    Ok(())
}

/// Published figures are integers or a few decimals; print them as they came.
fn format_num(v: f64) -> String {
    if v.abs() >= 1000.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn list(as_json: bool) -> CliResult<()> {
    let body = ListBody {
        profiles: profiles::PROFILES
            .iter()
            .map(|p| Entry {
                name: p.name,
                summary: p.summary,
                source: p.source,
            })
            .collect(),
        hosts: profiles::HOSTS
            .iter()
            .map(|h| Entry {
                name: h.name,
                summary: h.summary,
                source: h.source,
            })
            .collect(),
    };
    if as_json {
        json::print(&json::Envelope {
            schema_version: json::SCHEMA_VERSION,
            command: "sim list",
            target: None,
            device_time_s: None,
            body,
        });
        return Ok(());
    }
    let rows = |v: &[Entry]| {
        v.iter()
            .map(|e| vec![e.name.to_string(), e.summary.to_string(), e.source.to_string()])
            .collect::<Vec<_>>()
    };
    crate::outln!(
        "Cards (use as sim:NAME):\n{}",
        table::grid(&["profile", "what", "source"], &rows(&body.profiles))
    );
    crate::outln!(
        "\nHost presets (use as sim:NAME,host=PRESET):\n{}",
        table::grid(&["host", "what", "source"], &rows(&body.hosts))
    );
    Ok(())
}

fn show(profile: &str, as_toml: bool, as_json: bool) -> CliResult<()> {
    let spec = if profile.starts_with("sim:") {
        profile.to_string()
    } else {
        format!("sim:{profile}")
    };
    let TargetSpec::Sim { base, overrides } = resolve::parse(&spec)? else {
        unreachable!("sim: prefix")
    };
    let params = params_from_spec(&base, &overrides).map_err(|e| {
        CliError::usage(format!("bad simulated card '{profile}': {e}")).hint("`flashlab sim list` names the profiles")
    })?;
    let known = profiles::profile(&base);
    if as_toml {
        if let Some(p) = known {
            crate::outln!("# {}: {}\n# source: {}", p.name, p.summary, p.source);
        }
        crate::out!("{}", params.to_toml());
        return Ok(());
    }
    let mut map = serde_json::Map::new();
    for k in KEYS {
        let text = params.get(k.key);
        // Each value is already TOML text; parse it once to keep its type in JSON.
        let v = match toml::from_str::<toml::Table>(&format!("v = {text}"))
            .ok()
            .and_then(|t| t.get("v").cloned())
        {
            Some(toml::Value::Integer(i)) => serde_json::json!(i),
            Some(toml::Value::Float(f)) => serde_json::json!(f),
            Some(toml::Value::Boolean(b)) => serde_json::json!(b),
            Some(toml::Value::String(s)) => serde_json::json!(s),
            _ => serde_json::json!(text),
        };
        map.insert(k.key.to_string(), v);
    }
    if as_json {
        let body = ShowBody {
            profile,
            summary: known.map(|p| p.summary),
            source: known.map(|p| p.source),
            params: map,
        };
        json::print(&json::Envelope {
            schema_version: json::SCHEMA_VERSION,
            command: "sim show",
            target: None,
            device_time_s: None,
            body,
        });
        return Ok(());
    }
    if let Some(p) = known {
        crate::outln!("{}: {}\nsource: {}\n", p.name, p.summary, p.source);
    }
    let rows: Vec<Vec<String>> = KEYS
        .iter()
        .map(|k| {
            vec![
                k.key.to_string(),
                params.get(k.key),
                k.unit.to_string(),
                k.doc.to_string(),
            ]
        })
        .collect();
    crate::outln!("{}", table::grid(&["key", "value", "unit", "meaning"], &rows));
    Ok(())
}
