//! Commands that touch no device: `sim list`, `sim show`, `sim reproduce`,
//! `decode`. Each gives a run document with no target.

use crate::args::SimCard;
use crate::document::RunDocument;
use crate::document::bodies::{Body, DecodeBody, Described, ReproduceAll, SimList, SimShow};
use crate::error::{CliError, CliResult};
use crate::registers::{self, Family, RegisterKind};
use crate::sim::params::KEYS;
use crate::sim::{profiles, reproduce};

pub fn sim_list() -> RunDocument {
    let entry = |p: &crate::sim::hosts::Preset| Described {
        name: p.name.into(),
        summary: p.summary.into(),
        source: p.source.into(),
    };
    let mut doc = RunDocument::new(crate::document::CommandName::SimList, None);
    doc.body = Body::SimList(SimList {
        profiles: profiles::PROFILES.iter().map(entry).collect(),
        hosts: crate::sim::hosts::HOSTS.iter().map(entry).collect(),
    });
    doc.finish(None);
    doc
}

/// `sim show --toml`: a file `sim:FILE.toml` reads back, headed by the
/// profile's source.
pub fn sim_toml(card: &SimCard) -> String {
    let mut out = String::new();
    if let Some(p) = profiles::profile(card.base()) {
        out.push_str(&format!("# {}: {}\n# source: {}\n", p.name, p.summary, p.source));
    }
    out.push_str(&card.params.to_toml());
    out
}

pub fn sim_show(card: &SimCard) -> RunDocument {
    let params = &card.params;
    let known = profiles::profile(card.base());
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
    let mut doc = RunDocument::new(crate::document::CommandName::SimShow, None);
    doc.body = Body::SimShow(SimShow {
        profile: card.text.clone(),
        summary: known.map(|p| p.summary.to_string()),
        source: known.map(|p| p.source.to_string()),
        params: map,
        toml: sim_toml(card),
    });
    doc.finish(None);
    doc
}

pub fn sim_reproduce(name: &str) -> CliResult<RunDocument> {
    let names: Vec<&str> = if name == "all" {
        reproduce::EXPERIMENTS.iter().map(|e| e.0).collect()
    } else {
        vec![name]
    };
    let mut reports = Vec::new();
    for n in names {
        reports.push(
            reproduce::run(n)
                .map_err(|e| CliError::usage(e.to_string()).hint("experiments: at91, hsq, cf, flashbench, all"))?,
        );
    }
    let mut doc = RunDocument::new(crate::document::CommandName::SimReproduce, None);
    if reports.len() == 1 {
        doc.body = Body::Reproduced(reports.remove(0));
    } else {
        let max = reports.iter().map(|r| r.max_abs_error_pct).fold(0.0, f64::max);
        let within_15_pct = reports.iter().map(|r| r.within_15_pct).sum();
        let cells = reports.iter().map(|r| r.rows.len()).sum();
        doc.body = Body::ReproduceAll(ReproduceAll {
            experiments: reports,
            max_abs_error_pct: max,
            within_15_pct,
            cells,
        });
    }
    doc.finish(None);
    Ok(doc)
}

pub fn decode(kind: RegisterKind, hex: &str, mmc: bool) -> CliResult<RunDocument> {
    let family = if mmc { Family::Mmc } else { Family::Sd };
    let bad = |e: registers::RegisterError| {
        CliError::usage(format!("cannot decode {}: {e}", kind.name())).hint(
            "paste the register as sysfs shows it (e.g. `cat /sys/block/mmcblk0/device/cid`); --mmc selects the MMC/eMMC layout for CID/CSD",
        )
    };
    let bytes = registers::hex::parse_register(hex, kind.name(), kind.byte_len()).map_err(|e| bad(e.into()))?;
    let mut decoded = registers::decode_bytes(kind, family, &bytes).map_err(bad)?;
    if let Some(note) = registers::mistaken_for(kind, family, &bytes, &decoded) {
        match &mut decoded {
            registers::Decoded::Cid(c) => c.notes.insert(0, note),
            registers::Decoded::Csd(c) => c.notes.insert(0, note),
            registers::Decoded::Scr(_) | registers::Decoded::Ssr(_) => {}
        }
    }
    let mut doc = RunDocument::new(crate::document::CommandName::Decode, None);
    doc.body = Body::Decode(DecodeBody {
        register: kind.name().to_ascii_lowercase(),
        layout: if mmc { "MMC" } else { "SD" }.to_string(),
        decoded,
    });
    doc.finish(None);
    Ok(doc)
}
