//! flashbench's printed output, read back into typed tables.
//!
//! The formats are flashbench's own (bradfa/flashbench at d783b1b,
//! flashbench.c and vm.c, read to learn the format, nothing copied):
//! - `-a`: `align N\tpre T\ton T\tpost T\tdiff T`, rows from the largest
//!   boundary down to twice the block size; each time through
//!   `snprintf(buf, 8, ...)`, so "%.3g" plus ns, µs, ms or "%.4gs" — and a
//!   negative diff always takes the ns branch and loses its unit (and
//!   perhaps its last digits) to the 8-byte buffer: "-412331" or "-49389n"
//!   (github.com/bradfa/flashbench issue #16);
//! - `--open-au`: one row per chunk size from the erase size down to the
//!   block size, `SIZE RATE` (sizes "%0.3gKiB", rates "%.03gM/s", each padded
//!   to 7 characters);
//! - `--find-fat`: the same rows with one rate per erase block (`--fat-nr`,
//!   6 by default);
//! - `--scatter`: `MiB\tms` pairs, "%f\t%f".
//!
//! Around the tables people paste prompts, mail quoting ("> "), terminal
//! escapes, CID lines and fdisk output; tables may be cut (a user's ^C, an
//! archive's excerpt) or have their line breaks collapsed. Lines that are
//! not tables are skipped; a row that starts like flashbench's but does not
//! read is an error naming its line, unless it is the last of its table
//! (then it was cut, and the import says so).

use std::fmt;

/// flashbench's defaults (its `parse_arguments`): used where the command
/// line was not pasted with the table.
pub const DEFAULT_BLOCKSIZE: u64 = 16 << 10;
pub const DEFAULT_ERASESIZE: u64 = 4 << 20;
pub const DEFAULT_OPEN_AU_NR: u64 = 2;

/// Largest size or count read from a file: anything larger is not from a
/// flash card's flashbench run (and keeps every product below u64).
const MAX_SIZE: u64 = 1 << 50;
const MAX_COUNT: u64 = 1 << 20;
/// Most rows of one table and most points of a scatter: flashbench's
/// scatter prints at most 2^16 (its `scatter_order` limit).
const MAX_ROWS: usize = 1 << 16;

/// The options of a flashbench command line that shape its tables.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Invocation {
    /// 1-based line the command was on.
    pub line: usize,
    pub text: String,
    pub align: bool,
    pub open_au: bool,
    pub find_fat: bool,
    pub scatter: bool,
    pub random: bool,
    pub blocksize: Option<u64>,
    pub erasesize: Option<u64>,
    pub open_au_nr: Option<u64>,
    pub fat_nr: Option<u64>,
    /// Values the import could not read (a shell variable), by option.
    pub unread: Vec<String>,
}

/// How a row's diff was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Diff {
    /// As printed, with its unit.
    Printed,
    /// Negative and printed without a unit (flashbench issue #16): read as ns.
    NoUnit,
    /// Printed without a unit and with digits lost: taken from pre/on/post.
    Recomputed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlignRow {
    pub line: usize,
    pub boundary: u64,
    pub pre_ns: f64,
    pub on_ns: f64,
    pub post_ns: f64,
    pub diff_ns: f64,
    pub diff: Diff,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlignRun {
    pub invocation: Option<Invocation>,
    pub rows: Vec<AlignRow>,
    /// The line of a row cut off mid-way, left out.
    pub cut: Option<usize>,
}

/// One chunk size's rates: one for `--open-au`, one per AU for
/// `--find-fat`, one per column of a table of several cards. `None` where
/// a cell was empty or cut.
#[derive(Debug, Clone, PartialEq)]
pub struct RateRow {
    pub line: usize,
    pub chunk: u64,
    pub rates: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateKind {
    OpenAu,
    FindFat,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RateRun {
    pub kind: RateKind,
    pub invocation: Option<Invocation>,
    pub rows: Vec<RateRow>,
    pub cut: Option<usize>,
}

/// A table with a header naming its columns ("Size  CardA  CardB"), as
/// people lay several cards' `--open-au` runs side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnTable {
    pub line: usize,
    pub names: Vec<String>,
    /// Where each name starts on its line: a row's cells go to the nearest
    /// (a blank cell leaves no token).
    pub name_columns: Vec<usize>,
    pub invocation: Option<Invocation>,
    pub rows: Vec<RateRow>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScatterRun {
    pub line: usize,
    /// (offset in MiB, latency in ms), as printed.
    pub points: Vec<(f64, f64)>,
}

/// Everything read from one input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub align: Vec<AlignRun>,
    pub rates: Vec<RateRun>,
    pub columns: Vec<ColumnTable>,
    pub scatter: Vec<ScatterRun>,
    /// A CID register in hex (32 digits after a line naming `cid`).
    pub cid: Option<(usize, String)>,
    /// The device size fdisk printed ("..., 3904897024 bytes").
    pub size_bytes: Option<u64>,
    pub lines: usize,
}

impl Parsed {
    /// Give tables pasted without a command line this one.
    pub fn assume(&mut self, inv: &Invocation) {
        for a in &mut self.align {
            a.invocation.get_or_insert_with(|| inv.clone());
        }
        for r in &mut self.rates {
            r.invocation.get_or_insert_with(|| inv.clone());
        }
        for c in &mut self.columns {
            c.invocation.get_or_insert_with(|| inv.clone());
        }
    }

    pub fn is_empty(&self) -> bool {
        self.align.is_empty() && self.rates.is_empty() && self.columns.is_empty() && self.scatter.is_empty()
    }
}

/// Why an input cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub enum ParseError {
    /// A row that starts like flashbench's but does not read, inside a table.
    Row { line: usize, text: String, why: String },
    /// A number past what any card's run prints.
    TooLarge { line: usize, what: String },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Row { line, text, why } => write!(f, "line {line}: '{text}' is not a flashbench row: {why}"),
            ParseError::TooLarge { line, what } => {
                write!(f, "line {line}: {what} is larger than any flashbench run prints")
            }
        }
    }
}

/// A line as people paste it, made plain: terminal escapes (real, and
/// written out as `^[[A`), `^C`, carriage returns and mail quoting gone.
fn clean(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // ESC [ params letter
                if chars.peek() == Some(&'[') {
                    chars.next();
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if n.is_ascii_alphabetic() || n == '~' {
                            break;
                        }
                    }
                }
            }
            '^' if chars.peek() == Some(&'[') => {
                chars.next();
                if chars.peek() == Some(&'[') {
                    chars.next();
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if n.is_ascii_alphabetic() || n == '~' {
                            break;
                        }
                    }
                }
            }
            '^' if chars.peek() == Some(&'C') => {
                chars.next();
            }
            '\r' => {}
            _ => s.push(c),
        }
    }
    let mut t = s.trim_start();
    while let Some(rest) = t.strip_prefix('>').or_else(|| t.strip_prefix('|')) {
        t = rest.trim_start();
    }
    t.trim_end().to_string()
}

/// A size as flashbench prints it ("4MiB", "512KiB", "1.5MiB", "512B").
fn size(tok: &str) -> Option<u64> {
    let (num, unit) = split_unit(tok)?;
    let mult: f64 = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let v = (num * mult).round();
    (v >= 1.0 && v <= MAX_SIZE as f64).then_some(v as u64)
}

/// A rate as flashbench prints it ("8.79M/s", "912K/s"), in bytes/s
/// (flashbench's K and M are 10^3 and 10^6, vm.c's R_BPS). A trailing
/// marker a poster added ("47K/s(*)") is dropped.
fn rate(tok: &str) -> Option<f64> {
    let tok = tok.split('(').next().unwrap_or(tok);
    let body = tok.strip_suffix("/s")?;
    let (num, unit) = split_unit(body)?;
    let mult = match unit {
        "B" => 1.0,
        "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        _ => return None,
    };
    Some(num * mult)
}

/// A time: "735µs", "1.08ms", "5.85µs", "324ns", "1.2s" (µ also as the Greek
/// mu, "us", or mangled by a wrong charset). A bare or "n"-ended negative
/// number is flashbench issue #16's unitless diff, in ns: `Diff::NoUnit`.
fn time(tok: &str) -> Option<(f64, bool)> {
    if let Ok(v) = tok.parse::<f64>() {
        return (v < 0.0 && v.is_finite()).then_some((v, false));
    }
    if let Some(n) = tok.strip_suffix('n')
        && !tok.ends_with("ns")
        && let Ok(v) = n.parse::<f64>()
    {
        return (v < 0.0).then_some((v, false));
    }
    let (num, unit) = split_unit(tok)?;
    let mult = match unit {
        "ns" => 1.0,
        "µs" | "μs" | "us" | "Âµs" | "\u{fffd}s" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some((num * mult, true))
}

/// "8.79M/s" → (8.79, "M"): the number (C's %g, exponent included) and what
/// follows it.
fn split_unit(tok: &str) -> Option<(f64, &str)> {
    let b = tok.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits = i;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if i == digits {
        return None;
    }
    if i + 1 < b.len() && b[i] == b'e' && (b[i + 1] == b'+' || b[i + 1] == b'-') {
        let mut j = i + 2;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > i + 2 {
            i = j;
        }
    }
    let num: f64 = tok[..i].parse().ok()?;
    num.is_finite().then_some((num, &tok[i..]))
}

/// A shell number as people write flashbench's options: `4194304`,
/// `$[4 * 1024 * 1024]`, `$((4*1024*1024))`, `${preferred_erase_size:-4194304}`,
/// `4M`-style sizes. None for what only the shell knew.
fn shell_number(text: &str) -> Option<u64> {
    let t = text.trim();
    let inner = if let Some(x) = t.strip_prefix("$[").and_then(|x| x.strip_suffix(']')) {
        x
    } else if let Some(x) = t.strip_prefix("$((").and_then(|x| x.strip_suffix("))")) {
        x
    } else if let Some(x) = t.strip_prefix("${").and_then(|x| x.strip_suffix('}')) {
        return x.split_once(":-").and_then(|(_, d)| shell_number(d));
    } else {
        return t
            .parse::<u64>()
            .ok()
            .or_else(|| crate::units::parse_size(t).ok())
            .filter(|&v| v <= MAX_SIZE);
    };
    inner.split('*').try_fold(1u64, |acc, f| {
        let v: u64 = f.trim().parse().ok()?;
        acc.checked_mul(v).filter(|&p| p <= MAX_SIZE)
    })
}

/// The tokens of a command line, with `$[4 * 1024]` kept as one.
fn shell_tokens(line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for w in line.split_whitespace() {
        if open {
            if let Some(last) = out.last_mut() {
                last.push_str(w);
            }
        } else {
            out.push(w.to_string());
        }
        let s = out.last().map_or("", String::as_str);
        let depth = s.matches("$[").count() + s.matches("$((").count();
        let closes = s.matches(']').count() + s.matches("))").count();
        open = depth > closes;
    }
    out
}

/// What may stand before a command on its line: a prompt or a wrapper.
fn prompt_like(t: &str) -> bool {
    matches!(t, "$" | "#" | "%" | "sudo" | "time" | "nice" | "ionice" | "exec" | "-E")
        || t.ends_with(['$', '#', '%'])
        || (t.ends_with(':') && (t.contains('@') || t.contains('~')))
        || t.starts_with('[')
        || (t.contains('=') && !t.starts_with('-'))
}

/// A command line given apart from the output (`import --command`), for
/// tables pasted without theirs.
pub fn command_line(text: &str) -> Option<Invocation> {
    let t = text.trim();
    let t = if t
        .split_whitespace()
        .next()
        .is_some_and(|w| w == "flashbench" || w.ends_with("/flashbench"))
    {
        t.to_string()
    } else {
        format!("flashbench {t}")
    };
    invocation(0, &t).map(|(inv, _)| inv)
}

/// A flashbench command line: the options after the `flashbench` word, and
/// where the arguments end (the tokens after are the start of a table, on
/// a line whose breaks an archive collapsed).
fn invocation(line_no: usize, line: &str) -> Option<(Invocation, Vec<String>)> {
    let toks = shell_tokens(line);
    let at = toks
        .iter()
        .position(|t| t == "flashbench" || t.ends_with("/flashbench"))?;
    // A command, not prose naming one: only a prompt, sudo and the like
    // before it ("$", "#", "root@host:~/flashbench#", "sudo", "X=1").
    if !toks[..at].iter().all(|t| prompt_like(t)) {
        return None;
    }
    let mut inv = Invocation {
        line: line_no,
        text: line.to_string(),
        ..Invocation::default()
    };
    let mut any = false;
    let mut i = at + 1;
    let mut device_seen = false;
    while i < toks.len() {
        let t = toks[i].as_str();
        // After the device path, the first token that reads as a table row
        // ends the arguments.
        if device_seen && (size(t).is_some() || t == "align") {
            return any.then_some((inv, toks[i..].to_vec()));
        }
        let (name, inline) = match t.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (t, None),
        };
        let value = |i: &mut usize| -> Option<String> {
            if let Some(v) = &inline {
                return Some(v.clone());
            }
            *i += 1;
            toks.get(*i).cloned()
        };
        let number = |i: &mut usize, inv: &mut Invocation, opt: &str| -> Option<u64> {
            let v = value(i)?;
            let n = shell_number(&v);
            if n.is_none() {
                inv.unread.push(format!("{opt} {v}"));
            }
            n
        };
        match name {
            "-a" | "--align" => inv.align = true,
            "-O" | "--open-au" => inv.open_au = true,
            "-f" | "--find-fat" => inv.find_fat = true,
            "-s" | "--scatter" => inv.scatter = true,
            "-r" | "--random" => inv.random = true,
            "-b" | "--blocksize" => inv.blocksize = number(&mut i, &mut inv, "--blocksize"),
            "-e" | "--erasesize" => inv.erasesize = number(&mut i, &mut inv, "--erasesize"),
            "-0" | "--open-au-nr" => inv.open_au_nr = number(&mut i, &mut inv, "--open-au-nr"),
            "-F" | "--fat-nr" => inv.fat_nr = number(&mut i, &mut inv, "--fat-nr"),
            "-c" | "--count" | "-o" | "--out" | "-t" | "--offset" | "-S" | "--scatter-order" | "--scatter-span"
            | "-I" | "--interval-order" => {
                value(&mut i);
            }
            "-v" | "--verbose" | "-i" | "--interval" | "-p" | "\\" => {}
            _ if t.starts_with('-') => {}
            _ => device_seen = true,
        }
        any |= t.starts_with('-');
        i += 1;
    }
    any.then_some((inv, Vec::new()))
}

/// What one line holds.
enum Item {
    Align(AlignRow),
    /// An align row cut off before its diff.
    AlignCut,
    Rates(RateRow),
    Scatter(f64, f64),
}

/// The rows on one line's tokens (several where an archive collapsed the
/// breaks). Empty when the line is prose. An error when a row starts but
/// does not read; `Ok` with `AlignCut` last when the line ends mid-row.
fn rows(line_no: usize, toks: &[String]) -> Result<Vec<Item>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    // Scatter: exactly two plain numbers.
    if toks.len() == 2
        && let (Ok(a), Ok(b)) = (toks[0].parse::<f64>(), toks[1].parse::<f64>())
        && a.is_finite()
        && b.is_finite()
        && a >= 0.0
        && b >= 0.0
        && toks[0].contains('.')
    {
        return Ok(vec![Item::Scatter(a, b)]);
    }
    while i < toks.len() {
        if toks[i] == "align" {
            let Some(b) = toks.get(i + 1) else {
                return if out.is_empty() {
                    Ok(out)
                } else {
                    Err("the row ends after 'align'".into())
                };
            };
            let Ok(boundary) = b.parse::<u64>() else {
                // "align" in prose.
                return if out.is_empty() {
                    Ok(out)
                } else {
                    Err(format!("'{b}' is not a boundary in bytes"))
                };
            };
            if toks.get(i + 2).is_some_and(|w| w != "pre") {
                return if out.is_empty() {
                    Ok(out)
                } else {
                    Err(format!("expected 'pre' after 'align {boundary}'"))
                };
            }
            if boundary == 0 || boundary > MAX_SIZE {
                return Err(format!("boundary {boundary} is not a size flashbench prints"));
            }
            let mut vals = [(0.0, true); 4];
            for (k, word) in ["pre", "on", "post", "diff"].iter().enumerate() {
                let at = i + 2 + 2 * k;
                match (toks.get(at), toks.get(at + 1)) {
                    (None, _) | (Some(_), None) if at + 1 >= toks.len() => {
                        out.push(Item::AlignCut);
                        return Ok(out);
                    }
                    (Some(w), Some(v)) if w == word => match time(v) {
                        Some(t) if *word == "diff" || (t.1 && t.0 >= 0.0) => vals[k] = t,
                        _ => return Err(format!("the {word} time '{v}' is not a time")),
                    },
                    (Some(w), _) => return Err(format!("expected '{word}', found '{w}'")),
                    (None, _) => return Err(format!("expected '{word}'")),
                }
            }
            let (pre, on, post) = (vals[0].0, vals[1].0, vals[2].0);
            let recomputed = on - (pre + post) / 2.0;
            let (diff_ns, diff) = if vals[3].1 {
                (vals[3].0, Diff::Printed)
            } else {
                // No unit: flashbench's ns branch, cut to 7 characters. Where
                // ten times the value fits pre/on/post better, a digit was lost.
                let v = vals[3].0;
                if (v * 10.0 - recomputed).abs() < (v - recomputed).abs() {
                    (recomputed, Diff::Recomputed)
                } else {
                    (v, Diff::NoUnit)
                }
            };
            out.push(Item::Align(AlignRow {
                line: line_no,
                boundary,
                pre_ns: pre,
                on_ns: on,
                post_ns: post,
                diff_ns,
                diff,
            }));
            i += 10;
        } else if let Some(chunk) = size(&toks[i]) {
            let mut rates = Vec::new();
            let mut j = i + 1;
            while j < toks.len() {
                let t = toks[j].as_str();
                if let Some(r) = rate(t) {
                    rates.push(Some(r));
                } else if t.starts_with("(cut") || t == "-" {
                    rates.push(None);
                } else {
                    break;
                }
                j += 1;
            }
            if rates.is_empty() {
                return if out.is_empty() {
                    Ok(out)
                } else {
                    Err(format!("'{}' has no rate after it", toks[i]))
                };
            }
            if j < toks.len() && size(&toks[j]).is_none() {
                // Prose after a row-like start ("4MiB of data was ..."):
                // only a row when nothing else follows.
                if out.is_empty() {
                    return Ok(out);
                }
                return Err(format!("'{}' is not a rate", toks[j]));
            }
            out.push(Item::Rates(RateRow {
                line: line_no,
                chunk,
                rates,
            }));
            i = j;
        } else {
            return if out.is_empty() {
                Ok(out)
            } else {
                Err(format!("'{}' is not a size or 'align'", toks[i]))
            };
        }
    }
    Ok(out)
}

/// A column header: "Size" and at least two names.
fn header(toks: &[String]) -> Option<Vec<String>> {
    (toks.len() >= 3 && toks[0].eq_ignore_ascii_case("size") && toks[1..].iter().all(|t| size(t).is_none()))
        .then(|| toks[1..].to_vec())
}

/// The words of a line with the character column each starts at.
fn positioned(line: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut word = String::new();
    for (col, c) in line.chars().chain(std::iter::once(' ')).enumerate() {
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                out.push((s, std::mem::take(&mut word)));
            }
        } else {
            start.get_or_insert(col);
            word.push(c);
        }
    }
    out
}

/// A row of a table of several cards: each cell under the nearest name.
fn column_row(no: usize, line: &str, t: &ColumnTable) -> Option<RateRow> {
    let words = positioned(line);
    let chunk = size(&words.first()?.1)?;
    let mut rates = vec![None; t.names.len()];
    for (col, w) in &words[1..] {
        let k = (0..t.names.len()).min_by_key(|&k| t.name_columns[k].abs_diff(*col))?;
        rates[k] = rate(w);
    }
    Some(RateRow { line: no, chunk, rates })
}

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
            None => (line.split_whitespace().map(str::to_string).collect::<Vec<_>>(), false),
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
        let items = rows(no, &toks).map_err(|why| ParseError::Row {
            line: no,
            text: line.clone(),
            why,
        })?;
        if items.is_empty() {
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

    /// Refuse tables longer than any flashbench prints before storing more.
    fn count_rows(&self, no: usize) -> Result<(), ParseError> {
        let n = match &self.open {
            Open::None => 0,
            Open::Align(r) => r.rows.len(),
            Open::Rates(r) => r.rows.len(),
            Open::Columns(c) => c.rows.len(),
            Open::Scatter(s) => s.points.len(),
        };
        if n >= MAX_ROWS {
            return Err(ParseError::TooLarge {
                line: no,
                what: format!("a table of more than {MAX_ROWS} rows"),
            });
        }
        Ok(())
    }
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
        if let Some(head) = joined.trim_end().strip_suffix('\\') {
            pending = Some((no, head.to_string()));
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
                return Err(ParseError::TooLarge {
                    line: inv.line,
                    what: format!("{what} {}", v.unwrap_or(0)),
                });
            }
        }
    }
    Ok(r.parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_sizes_and_rates_read_as_flashbench_prints_them() {
        assert_eq!(time("735µs"), Some((735_000.0, true)));
        assert_eq!(time("1.08ms"), Some((1_080_000.0, true)));
        assert_eq!(time("5.85us"), Some((5850.0, true)));
        assert_eq!(time("1e+03µs"), Some((1_000_000.0, true)));
        assert_eq!(time("-412331"), Some((-412_331.0, false)));
        assert_eq!(time("-49389n"), Some((-49_389.0, false)));
        assert_eq!(
            time("412331"),
            None,
            "a positive number without a unit is not flashbench's"
        );
        assert_eq!(size("1.5MiB"), Some(3 << 19));
        assert_eq!(size("512B"), Some(512));
        assert_eq!(rate("912K/s"), Some(912_000.0));
        assert_eq!(rate("47K/s(*)"), Some(47_000.0));
        assert_eq!(shell_number("$[4*1024*1024]"), Some(4 << 20));
        assert_eq!(shell_number("${preferred_erase_size:-4194304}"), Some(4 << 20));
        assert_eq!(shell_number("$ERASE"), None);
        assert_eq!(
            shell_number("$[99999999999 * 99999999999]"),
            None,
            "overflow is refused"
        );
    }

    #[test]
    fn quoting_escapes_and_collapsed_lines_are_read() {
        let p = parse(
            "> # ./flashbench -O -0 7  -b 512 /dev/block/mmcblk0p9\n> 4MiB    6.32M/s\n> 2MiB    8.63M/s\n\
             > ^[[A^[[D^[[A1MiB  12.3M/s\n> ^C\n\
             # ./flashbench -O -0 21 -b 512 /dev/x 4MiB 11.2M/s 2MiB 12.4M/s 1MiB 4.65M/s\n",
        )
        .unwrap();
        assert_eq!(p.rates.len(), 2);
        let a = &p.rates[0];
        assert_eq!(a.invocation.as_ref().unwrap().open_au_nr, Some(7));
        assert_eq!(a.invocation.as_ref().unwrap().blocksize, Some(512));
        assert_eq!(
            a.rows.iter().map(|r| r.chunk).collect::<Vec<_>>(),
            [4 << 20, 2 << 20, 1 << 20]
        );
        assert_eq!(p.rates[1].rows.len(), 3);
        assert_eq!(p.rates[1].invocation.as_ref().unwrap().open_au_nr, Some(21));
    }

    #[test]
    fn a_row_cut_at_the_end_is_marked_and_one_broken_inside_is_an_error() {
        let p = parse("align 8192 pre 1ms on 1.2ms post 1ms diff 200µs\nalign 4096 pre 1.04ms\n").unwrap();
        assert_eq!(p.align[0].rows.len(), 1);
        assert_eq!(p.align[0].cut, Some(2));
        let e = parse("align 8192 pre 1ms on 1.2ms post 1ms diff 200µs\nalign 4096 pre 1x on 2 post 3 diff 4\n")
            .unwrap_err();
        assert!(matches!(e, ParseError::Row { line: 2, .. }), "{e}");
    }

    #[test]
    fn issue_16s_unitless_diffs_are_nanoseconds_or_recomputed() {
        let p = parse(
            "align 34359738368\tpre 986µs\ton 1.01ms\tpost 1.87ms\tdiff -412331\n\
             align 17179869184\tpre 690µs\ton 1.01ms\tpost 1.44ms\tdiff -49389n\n\
             align 8589934592\tpre 5ms\ton 3ms\tpost 5ms\tdiff -200000\n",
        )
        .unwrap();
        let r = &p.align[0].rows;
        assert_eq!((r[0].diff_ns, r[0].diff), (-412_331.0, Diff::NoUnit));
        assert_eq!((r[1].diff_ns, r[1].diff), (-49_389.0, Diff::NoUnit));
        // -2,000,000 ns printed as "-200000" (cut): pre/on/post say so.
        assert_eq!((r[2].diff_ns, r[2].diff), (-2_000_000.0, Diff::Recomputed));
    }
}
