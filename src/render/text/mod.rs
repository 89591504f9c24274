//! The terminal renderer: each command's tables and verdicts, read from the
//! run document, one file per family of results.

mod info;
mod measure;
mod offline;
mod probe;
mod results;

use std::fmt::Write;

use super::Renderer;
use crate::document::{NoteKind, RunDocument};

pub struct Text;

pub use crate::console::wrap;

impl Renderer for Text {
    fn render(&self, doc: &RunDocument) -> String {
        let mut o = String::new();
        let device_s = doc.device_time_s.unwrap_or(0.0);
        match doc.command.as_str() {
            "probe" => probe::probe(&mut o, doc),
            "info" => {
                if let Some(i) = doc.get("info") {
                    info::info(&mut o, &i, doc.detail);
                }
            }
            "bench" => {
                if let Some(r) = doc.get("bench") {
                    measure::bench(&mut o, &r, device_s);
                }
            }
            "capacity" => {
                if let Some(r) = doc.get("capacity") {
                    measure::capacity(&mut o, &r, device_s);
                }
            }
            "align" | "open-au" | "fat" | "page" | "au" | "scatter" => {
                // Only the command's own result: open-au's align ran to find
                // the erase size, and said so on stderr.
                if let (true, Some(r)) = (doc.command == "align", doc.get("align")) {
                    measure::align(&mut o, &r, device_s);
                }
                if let Some(r) = doc.get("open_au") {
                    measure::open_au(&mut o, &r, device_s);
                }
                if let Some(r) = doc.get("fat") {
                    measure::fat(&mut o, &r, device_s);
                }
                if let (true, Some(r)) = (doc.command == "au", doc.get("au")) {
                    measure::au(&mut o, &r, device_s);
                }
                if let (true, Some(r)) = (doc.command == "page", doc.get("page")) {
                    measure::page(&mut o, &r, device_s);
                }
                if let Some(r) = doc.get("scatter") {
                    measure::scatter(&mut o, &r);
                }
            }
            "sim list" => {
                if let Some(l) = doc.body() {
                    offline::sim_list(&mut o, &l);
                }
            }
            "sim show" => {
                if let Some(s) = doc.body() {
                    offline::sim_show(&mut o, &s);
                }
            }
            "sim reproduce" => offline::sim_reproduce(&mut o, doc),
            "results list" => results::list(&mut o, doc),
            "results compare" => results::compare(&mut o, doc),
            "results import" => results::import(&mut o, doc),
            "report" => {
                if let Some(p) = doc.get::<serde_json::Value>("report") {
                    let _ = writeln!(o, "report written to {}", p["path"].as_str().unwrap_or(""));
                }
            }
            "decode" => offline::decode(&mut o, doc),
            "restore" => offline::restore(&mut o, doc),
            _ => {}
        }
        // Notes made while running went to stderr as they happened; the ones
        // about how the target was measured belong with the results.
        for n in doc.notes.iter().filter(|n| n.kind == NoteKind::Engine) {
            let _ = writeln!(o, "note: {}", n.message);
        }
        for w in &doc.warnings {
            let _ = writeln!(o, "warning: {}", w.message);
            if let Some(h) = &w.hint {
                let _ = writeln!(o, "hint: {h}");
            }
        }
        o
    }
}
