//! `probe`: the device and its verdicts on one screen, then advice.

use std::fmt::Write;

use crate::console::wrap;
use crate::document::RunDocument;
use crate::measure::advice::Advice;

/// Lines probe's text may take on stdout: an 80x24 terminal less the
/// prompt and two lines on stderr (where the run is saved; with no target,
/// that the built-in card is measured). kingston-sa04g's 28 lines had
/// scrolled its device and capacity off the screen.
const SCREEN_LINES: usize = 21;

/// Advice that is never shortened: a warning about the card or the run
/// must be read whole, whatever it pushes off the screen.
const WHOLE: &[&str] = &["pending_journal", "fake", "damaged"];

pub fn probe(o: &mut String, doc: &RunDocument) {
    let spec = doc.target.as_ref().map_or("", |t| t.spec.as_str());
    let sim = doc
        .target
        .as_ref()
        .is_some_and(|t| t.kind == crate::targets::TargetKind::Sim);
    // The device time beside the target, not on a line of its own: one
    // more line of advice fits.
    let first = format!(
        "{spec}: {:.1} device-seconds of I/O{}",
        doc.device_time_s.unwrap_or(0.0),
        if sim { " (simulated)" } else { "" }
    );
    let mut lines: Vec<String> = vec![wrap(&first, "", "  ")];
    // The one-screen summary first; the details (each step's own output)
    // are the individual commands' and the HTML report's.
    for (label, value) in crate::format::summary(doc) {
        let head = format!("  {label:<12} ");
        lines.push(wrap(&value, &head, &" ".repeat(head.len())));
    }
    for s in doc.extras.skipped.get().into_iter().flatten() {
        lines.push(wrap(s, "  skipped      ", "               "));
    }
    let mut lines: Vec<String> = lines.iter().flat_map(|l| l.lines().map(String::from)).collect();
    let advice = doc.extras.advice.get().map_or(&[][..], Vec::as_slice);
    if !advice.is_empty() {
        let room = SCREEN_LINES.saturating_sub(lines.len() + 1);
        let all = crate::console::stdio::verbose();
        let (shown, short) = fit(advice, if all { usize::MAX } else { room });
        lines.push(if short {
            "advice (cut to fit the screen; whole with -v, --json or the report):".into()
        } else {
            "advice:".into()
        });
        lines.extend(shown);
    }
    for l in lines {
        let _ = writeln!(o, "{l}");
    }
}

/// The advice in at most `room` lines: each piece wrapped whole where all
/// fit; else the longest pieces cut first, a line at a time and never
/// below one (a command of one line stays whole while a paragraph of four
/// loses its reasons), then the last pieces left out with their count.
/// True where anything was cut.
fn fit(advice: &[Advice], room: usize) -> (Vec<String>, bool) {
    let pieces: Vec<Vec<String>> = advice.iter().map(text_lines).collect();
    let mut keep: Vec<usize> = pieces.iter().map(Vec::len).collect();
    // A command is never cut: it copies whole or not at all.
    let commands: Vec<usize> = advice.iter().map(|a| usize::from(a.command.is_some())).collect();
    let lines = |keep: &[usize]| keep.iter().zip(&commands).map(|(k, c)| k + c).sum::<usize>();
    // Nor is the text of a command: it says what the command destroys.
    let cuttable = |i: usize| !WHOLE.contains(&advice[i].topic.as_str()) && advice[i].command.is_none();
    while lines(&keep) > room {
        // The longest that may be cut; the later of equals (the first
        // pieces are the cautions).
        let Some(i) = (0..keep.len())
            .filter(|&i| cuttable(i) && keep[i] > 1)
            .max_by_key(|&i| (keep[i], i))
        else {
            break;
        };
        keep[i] -= 1;
    }
    // Still too many at a line each: the last ones left out, counted on
    // a line of their own.
    let mut shown = keep.len();
    if lines(&keep) > room {
        while shown > 0 && lines(&keep[..shown]) + 1 > room {
            shown -= 1;
        }
    }
    let mut out = Vec::new();
    let mut short = shown < pieces.len();
    for ((piece, &k), a) in pieces.iter().zip(&keep).zip(advice).take(shown) {
        if k < piece.len() {
            short = true;
            out.extend(shortened(a, piece, k));
        } else {
            out.extend(piece.iter().cloned());
        }
        out.extend(command_line(a));
    }
    if shown < pieces.len() {
        out.push(format!("  ... and {} more", pieces.len() - shown));
    }
    (out, short)
}

/// A piece of advice in `k` of its wrapped lines (`piece`): its text up to
/// the last clause that ends in them (before a parenthesis, or at a full
/// stop, semicolon, colon or comma outside one), then "…", so it stops
/// where a thought does;
/// where no clause ends early enough, at the last word that fits
/// ([`cut`]). "unsure: erase block (the steps were small …" had stopped
/// inside the reason.
fn shortened(a: &Advice, piece: &[String], k: usize) -> Vec<String> {
    // A clause shorter than this says too little to stand alone.
    const LEAST: usize = 16;
    let text = &a.text;
    let mut ends: Vec<usize> = text.match_indices(" (").map(|(i, _)| i).collect();
    ends.extend(
        text.match_indices([';', '.', ':', ','])
            .map(|(i, _)| i + 1)
            .filter(|&i| text[i..].starts_with(' ')),
    );
    ends.sort_unstable();
    // Never inside a parenthesis: it would be left open.
    let closed = |e: &&usize| text[..**e].matches('(').count() == text[..**e].matches(')').count();
    for &end in ends.iter().rev().filter(|&&e| e >= LEAST).filter(closed) {
        let head = format!("{} …", text[..end].trim_end_matches([',', ';', ':', '.']));
        let lines: Vec<String> = wrap(&head, "  - ", "    ").lines().map(String::from).collect();
        if lines.len() <= k {
            return lines;
        }
    }
    let mut out = piece[..k - 1].to_vec();
    out.push(cut(&piece[k - 1]));
    out
}

/// A wrapped line that the piece stops at: its last word, and any
/// parenthesis it left open, replaced by "…" (the line then still fits
/// the width it was wrapped to).
fn cut(line: &str) -> String {
    let indent = line.len() - line.trim_start().len();
    let mut words: Vec<&str> = line[indent..].split_whitespace().collect();
    let open = |w: &[&str]| {
        let text = w.join(" ");
        text.matches('(').count() > text.matches(')').count()
    };
    // The list's dash is not a word to keep alone.
    let least = usize::from(words.first() == Some(&"-")) + 1;
    if words.len() > least {
        words.pop();
    }
    while words.len() > least && open(&words) {
        words.pop();
    }
    let kept = words.join(" ");
    format!("{}{} …", &line[..indent], kept.trim_end_matches([',', ';', ':']))
}

/// A piece of advice's text, wrapped as a list item.
fn text_lines(a: &Advice) -> Vec<String> {
    wrap(&a.text, "  - ", "    ").lines().map(String::from).collect()
}

/// Its command, on a line of its own and never wrapped, so it copies whole.
fn command_line(a: &Advice) -> Option<String> {
    a.command.as_ref().map(|c| format!("    {c}"))
}

/// The advice drawn from a run's confident verdicts (an import's), whole.
pub(super) fn advice(o: &mut String, doc: &RunDocument) {
    let advice = doc.extras.advice.get().map_or(&[][..], Vec::as_slice);
    if !advice.is_empty() {
        let _ = writeln!(o, "advice:");
        for a in advice {
            for l in text_lines(a).into_iter().chain(command_line(a)) {
                let _ = writeln!(o, "{l}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cut piece stops where a clause does, at the latest that fits.
    #[test]
    fn advice_is_cut_where_a_clause_ends() {
        let a = Advice {
            topic: "unsure".into(),
            text: "unsure: erase block (the steps were small against the noise, or the methods disagreed), \
                   so no advice is drawn from it; a card in a direct SD slot shows more of itself than one \
                   behind a USB reader. Run probe there"
                .into(),
            command: None,
        };
        let piece = text_lines(&a);
        assert_eq!(piece.len(), 3);
        assert_eq!(shortened(&a, &piece, 1), ["  - unsure: erase block …"]);
        assert_eq!(
            shortened(&a, &piece, 2),
            [
                "  - unsure: erase block (the steps were small against the noise, or the methods",
                "    disagreed), so no advice is drawn from it …"
            ]
        );
        // No clause ends early enough: the last word that fits.
        let b = Advice {
            text: "a single clause long enough to wrap onto a second line at eighty columns \
                   with no place where a thought stops"
                .into(),
            ..a
        };
        let piece = text_lines(&b);
        assert_eq!(shortened(&b, &piece, 1), [cut(&piece[0])]);
    }
}
