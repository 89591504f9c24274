//! Terminal text: each command's tables and verdicts, read from the run
//! document. A measuring test's text is the test's own (its folder's
//! `show.rs`, through the registry); probe, info and the commands that
//! measure nothing have theirs here, one file per family.

mod batch;
mod import;
mod info;
mod life;
mod offline;
mod probe;
mod results;

use std::fmt::Write;

use super::{Format, FormatError};
use crate::document::{Body, CommandName, NoteKind, RunDocument};

pub use crate::console::wrap;

pub struct Text;

impl Format for Text {
    fn render(&self, runs: &[(String, RunDocument)]) -> Result<String, FormatError> {
        // Every line fits the terminal (80 columns in a pipe): a summary of
        // 109 characters or a note of 1,000 was split mid-word by the
        // terminal.
        Ok(runs
            .iter()
            .map(|(_, d)| crate::console::wrap_long_lines(&render(d)))
            .collect())
    }
}

fn render(doc: &RunDocument) -> String {
    let mut o = String::new();
    let device_s = doc.device_time_s.unwrap_or(0.0);
    match &doc.body {
        Body::None => match &doc.command {
            // A batch's device: its summary, as probe's.
            CommandName::Probe | CommandName::Batch => probe::probe(&mut o, doc),
            CommandName::ImportFlashbench => import::import(&mut o, doc),
            CommandName::Life => {
                if let Some(l) = doc.extras.life.get() {
                    life::life(&mut o, l);
                }
            }
            CommandName::Info => {
                if let Some(i) = doc.extras.info.get() {
                    info::info(&mut o, i, doc.detail);
                }
            }
            // A test's own result only: open-au's align ran to find the
            // erase size, and said so on stderr.
            CommandName::Test(test) => {
                doc.results.text(*test, device_s, &mut o);
            }
            // Their documents carry a body (or, failed, only an error).
            CommandName::Emulate
            | CommandName::Trace
            | CommandName::Restore
            | CommandName::Report
            | CommandName::ResultsList
            | CommandName::ResultsShow
            | CommandName::ResultsCompare
            | CommandName::ResultsExport
            | CommandName::ResultsImport
            | CommandName::ResultsUpload
            | CommandName::SimList
            | CommandName::SimShow
            | CommandName::SimReproduce
            | CommandName::Decode
            | CommandName::DebugWritePattern
            | CommandName::Completions
            | CommandName::Man
            | CommandName::Unknown(_) => {}
        },
        Body::Decode(d) => offline::decode(&mut o, d),
        Body::SimList(l) => offline::sim_list(&mut o, l),
        Body::SimShow(s) => offline::sim_show(&mut o, s),
        Body::Reproduced(r) => offline::sim_reproduce(&mut o, std::slice::from_ref(r), None),
        Body::ReproduceAll(a) => offline::sim_reproduce(
            &mut o,
            &a.experiments,
            Some((a.within_15_pct, a.cells, a.max_abs_error_pct)),
        ),
        Body::Listing(l) => results::list(&mut o, l),
        Body::Comparison(c) => results::compare(&mut o, c),
        Body::Imported(r) => results::import(&mut o, r),
        Body::Pending(p) => offline::restore(&mut o, p),
        // A restore and the pattern workload report on stderr as they go.
        Body::Restored(_) | Body::SetAside(_) | Body::Pattern(_) => {}
        Body::Report(r) => {
            let _ = writeln!(o, "report written to {}", r.report.path);
        }
        // The device first, alone on its line, for `$(... | head -1)`.
        Body::Traced(c) => life::traced(&mut o, c),
        Body::Batch(b) => batch::batch(&mut o, &b.batch),
        Body::Uploaded(u) => {
            let u = &u.upload;
            let line = format!(
                "uploaded {} to {} ({} there already, unchanged)",
                crate::units::count(u.sent as u64, "run", "runs"),
                u.fleet,
                u.already
            );
            let _ = writeln!(o, "{}", crate::console::wrap(&line, "", ""));
        }
        Body::Emulating(e) => {
            let r = &e.emulate;
            let _ = writeln!(o, "{}", r.device);
            let _ = writeln!(o, "  card       {}", r.spec);
            let _ = writeln!(
                o,
                "  size       {}, {}-byte sectors",
                crate::units::Iec(r.size_bytes),
                r.sector_size
            );
            let _ = writeln!(
                o,
                "  geometry   AU {}, page {}; {} AUs open in order, {} random",
                crate::units::Iec(r.au_size_bytes),
                crate::units::Iec(r.page_size_bytes),
                r.open_aus_linear,
                r.open_aus_random
            );
            let _ = writeln!(o, "  FAT area   {} AUs", r.fat_area_aus);
            let _ = writeln!(
                o,
                "  time       scale {} (1 = real time); {:.0} µs serving overhead taken off",
                r.time_scale, r.overhead_us
            );
            if r.max_request_bytes > 0 {
                let _ = writeln!(
                    o,
                    "  requests   up to {} each; the loop device splits larger ones",
                    crate::units::Iec(r.max_request_bytes)
                );
            }
        }
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
