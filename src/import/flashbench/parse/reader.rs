//! One input read line by line into its tables: each row joins the open
//! table or starts the next, and a command line gives the tables after it
//! their options.

use super::invocation::invocation;
use super::rows::{Item, column_row, header, positioned, rows};
use super::tokens::{clean, size};
use super::{
    AlignRow, AlignRun, ColumnTable, Invocation, MAX_COUNT, MAX_ROWS, MAX_SIZE, MAX_TABLES, ParseError, Parsed,
    RateKind, RateRow, RateRun, ScatterRun, Skipped,
};

/// The open table being filled.
enum Open {
    None,
    Align(AlignRun),
    Rates(RateRun),
    Columns(ColumnTable),
    Scatter(ScatterRun),
}

struct Reader {
    parsed: Parsed,
    open: Open,
    invocation: Option<Invocation>,
    /// The previous non-empty line mentioned a CID.
    cid_next: bool,
    /// The last `-a` row cut before its diff: its line and text.
    cut_row: Option<(usize, String)>,
}

impl Reader {
    fn close(&mut self) {
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => {}
            Open::Align(r) => self.parsed.align.push(r),
            Open::Rates(r) => self.parsed.rates.push(r),
            Open::Columns(c) => self.parsed.columns.push(c),
            Open::Scatter(s) => self.parsed.scatter.push(s),
        }
    }

    fn align(&mut self, row: AlignRow) {
        // After a row cut mid-way, a row the run does not have yet, below
        // its first: the paste was cut inside the table (an archive's or a
        // forum's truncation), not by a ^C before the next run. The cut
        // row is skipped, and the table goes on.
        if let Open::Align(run) = &mut self.open
            && let Some(cut) = run.cut
            && run.rows.first().is_none_or(|f| row.boundary < f.boundary)
            && run.rows.iter().all(|l| l.boundary != row.boundary)
        {
            let text = self
                .cut_row
                .take()
                .filter(|c| c.0 == cut)
                .map(|c| c.1)
                .unwrap_or_default();
            self.parsed.skipped.push(Skipped {
                line: cut,
                text,
                why: "it is cut off before its diff".into(),
            });
            run.cut = None;
            run.rows.push(row);
            return;
        }
        // A boundary the run already has starts the next run (runs pasted
        // one after another; a variant's 3 x 2^n rows may come out of order).
        if let Open::Align(run) = &mut self.open
            && run.cut.is_none()
            && !run.rows.is_empty()
            && run.rows.iter().all(|l| l.boundary != row.boundary)
        {
            run.rows.push(row);
            return;
        }
        self.close();
        self.open = Open::Align(AlignRun {
            invocation: self.invocation.clone().filter(|i| i.align),
            rows: vec![row],
            cut: None,
        });
    }

    fn rates(&mut self, row: RateRow) {
        match &mut self.open {
            Open::Rates(run)
                if run.cut.is_none()
                    && run
                        .rows
                        .last()
                        .is_some_and(|l| row.chunk < l.chunk && l.rates.len() == row.rates.len()) =>
            {
                run.rows.push(row);
                return;
            }
            Open::None | Open::Align(_) | Open::Rates(_) | Open::Columns(_) | Open::Scatter(_) => {}
        }
        self.close();
        let inv = self.invocation.clone().filter(|i| i.open_au || i.find_fat);
        let kind = match &inv {
            Some(i) if i.find_fat && !i.open_au => RateKind::FindFat,
            Some(i) if i.open_au && !i.find_fat => RateKind::OpenAu,
            _ if row.rates.len() > 1 => RateKind::FindFat,
            _ => RateKind::OpenAu,
        };
        self.open = Open::Rates(RateRun {
            kind,
            invocation: inv,
            rows: vec![row],
            cut: None,
        });
    }

    fn line(&mut self, no: usize, raw: &str) -> Result<(), ParseError> {
        let line = clean(raw);
        if line.is_empty() {
            return Ok(());
        }
        let hexish = line.len() == 32 && line.bytes().all(|b| b.is_ascii_hexdigit());
        if hexish && self.cid_next && self.parsed.cid.is_none() {
            self.parsed.cid = Some((no, line.to_ascii_lowercase()));
        }
        self.cid_next = line.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w == "cid");
        if let Some(bytes) = fdisk_size(&line) {
            self.parsed.size_bytes = Some(bytes);
        }
        let (toks, from_command) = match invocation(no, &line) {
            Some((inv, rest)) => {
                self.close();
                self.invocation = Some(inv);
                (rest, true)
            }
            None => {
                if self.parsed.mentioned.is_none() {
                    self.parsed.mentioned = mentioned(&line).map(|m| (no, m));
                }
                (line.split_whitespace().map(str::to_string).collect::<Vec<_>>(), false)
            }
        };
        if toks.is_empty() {
            return Ok(());
        }
        if !from_command && let Some(names) = header(&toks) {
            // A header only counts when rows follow; remember it as a table.
            self.close();
            self.open = Open::Columns(ColumnTable {
                line: no,
                names,
                name_columns: positioned(&line).into_iter().skip(1).map(|w| w.0).collect(),
                invocation: self.invocation.clone(),
                rows: Vec::new(),
            });
            return Ok(());
        }
        if let Open::Columns(t) = &mut self.open
            && let Some(row) = column_row(no, &line, t)
        {
            if t.rows.last().is_none_or(|l| row.chunk < l.chunk) && t.rows.len() < MAX_ROWS {
                t.rows.push(row);
                return Ok(());
            }
            self.close();
        }
        let items = match rows(no, &toks) {
            Ok(items) => items,
            Err(why) => {
                self.parsed.skipped.push(Skipped {
                    line: no,
                    text: line,
                    why,
                });
                return Ok(());
            }
        };
        if items.is_empty() {
            if let Some(why) = self.cut_rate(&toks) {
                self.parsed.skipped.push(Skipped {
                    line: no,
                    text: line,
                    why,
                });
                return Ok(());
            }
            // Prose ends a scatter and an empty column header; a table of
            // rows may have a prompt or a blank between its rows.
            if matches!(&self.open, Open::Columns(t) if t.rows.is_empty()) {
                self.open = Open::None;
            } else if matches!(self.open, Open::Scatter(_)) {
                self.close();
            }
            return Ok(());
        }
        for item in items {
            self.count_rows(no)?;
            match item {
                Item::Align(r) => self.align(r),
                Item::AlignCut => {
                    self.cut_row = Some((no, line.clone()));
                    if let Open::Align(run) = &mut self.open
                        && run.cut.is_none()
                    {
                        run.cut = Some(no);
                    } else {
                        self.close();
                        self.open = Open::Align(AlignRun {
                            invocation: self.invocation.clone().filter(|i| i.align),
                            rows: Vec::new(),
                            cut: Some(no),
                        });
                    }
                }
                Item::Rates(r) => self.rates(r),
                Item::Scatter(a, b) => {
                    if let Open::Scatter(s) = &mut self.open {
                        s.points.push((a, b));
                    } else {
                        self.close();
                        self.open = Open::Scatter(ScatterRun {
                            line: no,
                            points: vec![(a, b)],
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Inside a table of rates, a row cut after its size or mid-rate
    /// ("128KiB", "128KiB  12.3M"): why it does not read. None for prose.
    fn cut_rate(&self, toks: &[String]) -> Option<String> {
        let Open::Rates(run) = &self.open else { return None };
        let chunk = size(toks.first()?)?;
        let rest = toks.get(1);
        let cut = toks.len() <= 2
            && run.rows.last().is_some_and(|l| chunk < l.chunk)
            && rest.is_none_or(|t| t.starts_with(|c: char| c.is_ascii_digit()));
        cut.then(|| match rest {
            None => "it is cut off before its rate".to_string(),
            Some(t) => format!("it is cut off mid-rate ('{t}')"),
        })
    }

    /// Refuse tables longer than any flashbench prints, and more tables
    /// than any session of runs holds, before storing more.
    fn count_rows(&self, no: usize) -> Result<(), ParseError> {
        let p = &self.parsed;
        if p.align.len() + p.rates.len() + p.columns.len() + p.scatter.len() >= MAX_TABLES {
            return Err(ParseError::OutOfRange {
                line: no,
                what: format!("more than {MAX_TABLES} tables"),
            });
        }
        let n = match &self.open {
            Open::None => 0,
            Open::Align(r) => r.rows.len(),
            Open::Rates(r) => r.rows.len(),
            Open::Columns(c) => c.rows.len(),
            Open::Scatter(s) => s.points.len(),
        };
        if n >= MAX_ROWS {
            return Err(ParseError::OutOfRange {
                line: no,
                what: format!("a table of more than {MAX_ROWS} rows"),
            });
        }
        Ok(())
    }
}

/// The options after a "flashbench" word in prose, where one follows.
fn mentioned(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == "flashbench" || w.ends_with("/flashbench"))?;
    let rest = &words[at + 1..];
    rest.first().is_some_and(|w| w.starts_with('-')).then(|| rest.join(" "))
}

/// fdisk's "Disk /dev/mmcblk1: 3904 MB, 3904897024 bytes" (old and new
/// wording): the size in bytes.
fn fdisk_size(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("Disk /")?;
    let words: Vec<&str> = rest.split(|c: char| c == ',' || c.is_whitespace()).collect();
    let at = words.iter().position(|w| *w == "bytes")?;
    words
        .get(at.checked_sub(1)?)?
        .parse()
        .ok()
        .filter(|&v: &u64| v <= MAX_SIZE)
}

/// Read one input. Lines ending in `\` continue a command line.
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let mut r = Reader {
        parsed: Parsed::default(),
        open: Open::None,
        invocation: None,
        cid_next: false,
        cut_row: None,
    };
    let mut pending: Option<(usize, String)> = None;
    let mut n = 0;
    for (i, raw) in text.lines().enumerate() {
        n = i + 1;
        let (no, joined) = match pending.take() {
            Some((start, mut acc)) => {
                acc.push(' ');
                acc.push_str(raw.trim());
                (start, acc)
            }
            None => (n, raw.to_string()),
        };
        // Cut in place, not copied: a copy of all that came before at
        // each of 80,000 continued lines took minutes.
        let kept = joined.trim_end().len();
        if joined[..kept].ends_with('\\') {
            let mut head = joined;
            head.truncate(kept - 1);
            pending = Some((no, head));
            continue;
        }
        r.line(no, &joined)?;
    }
    if let Some((no, rest)) = pending {
        r.line(no, &rest)?;
    }
    r.close();
    // Empty column headers were prose after all.
    r.parsed.columns.retain(|c| !c.rows.is_empty());
    r.parsed.scatter.retain(|s| s.points.len() >= 4);
    r.parsed.align.retain(|a| !a.rows.is_empty() || a.cut.is_some());
    r.parsed.lines = n;
    for inv in r
        .parsed
        .align
        .iter()
        .filter_map(|a| a.invocation.as_ref())
        .chain(r.parsed.rates.iter().filter_map(|a| a.invocation.as_ref()))
    {
        for (what, v) in [("--open-au-nr", inv.open_au_nr), ("--fat-nr", inv.fat_nr)] {
            if v.is_some_and(|v| v == 0 || v > MAX_COUNT) {
                return Err(ParseError::OutOfRange {
                    line: inv.line,
                    what: format!("{what} {}", v.unwrap_or(0)),
                });
            }
        }
    }
    Ok(r.parsed)
}
