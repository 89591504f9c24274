//! `flashlab import flashbench FILE...`: flashbench's printed output read,
//! judged and stored as a run of the card it measured, so `results` and
//! `report` show it beside flashlab's own runs.

use std::io::Read;
use std::path::PathBuf;

use crate::document::device::DeviceId;
use crate::document::{NoteKind, RunDocument};
use crate::error::{CliError, CliResult};
use crate::import::flashbench::{self, Source, judge};
use crate::registers::{Decoded, Family, RegisterKind};

/// The most text read from one input: flashbench's longest output (a
/// scatter of 2^16 points) is about 1.5 MB.
const MAX_INPUT: u64 = 16 << 20;

/// What `import flashbench` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Files, or "-" for stdin.
    pub inputs: Vec<String>,
    /// One column of a table of several cards.
    pub column: Option<String>,
    /// A name for the card, where the output gives no CID.
    pub device: Option<String>,
    /// flashbench's command line, for tables pasted without theirs.
    pub command: Option<String>,
    /// The results store (None: --no-store).
    pub store: Option<PathBuf>,
    /// The user named it (`Places::store_named_by`).
    pub store_named: bool,
}

const HINT: &str = "give flashbench's output as it printed it (-a, --open-au, --find-fat or --scatter), \
                    with its command line; text around the tables is skipped";

fn read(input: &str) -> CliResult<String> {
    let bytes = if input == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .take(MAX_INPUT + 1)
            .read_to_end(&mut b)
            .map_err(|e| CliError::usage(format!("cannot read stdin: {e}")).hint(HINT))?;
        if b.len() as u64 > MAX_INPUT {
            return Err(CliError::usage(format!("stdin holds more than {MAX_INPUT} bytes")).hint(HINT));
        }
        b
    } else {
        crate::files::read_small_bytes(std::path::Path::new(input), MAX_INPUT)
            .map_err(|why| CliError::usage(format!("cannot read {input}: {why}")).hint(HINT))?
    };
    // Pasted output is often Latin-1 (µ as one byte): read what is text.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn flashbench(o: &Options) -> CliResult<RunDocument> {
    if o.inputs.iter().filter(|i| *i == "-").count() > 1 {
        return Err(CliError::usage("stdin ('-') is named more than once").hint("name it once"));
    }
    let fallback = match &o.command {
        Some(c) => Some(flashbench::parse::command_line(c).ok_or_else(|| {
            CliError::usage(format!("--command '{c}' names no flashbench option"))
                .hint("for example --command \"--open-au --open-au-nr=5 --random --erasesize=4194304\"")
        })?),
        None => None,
    };
    let parsed = parse_all(&o.inputs, fallback.as_ref())?;
    let names: Vec<(String, usize, Vec<String>)> = parsed
        .iter()
        .flat_map(|(i, p)| p.columns.iter().map(move |c| (i.clone(), c.line, c.names.clone())))
        .collect();
    let column = column_of(o.column.as_deref(), &names)?;
    let inputs: Vec<judge::Input<'_>> = parsed
        .iter()
        .map(|(name, p)| judge::Input { name, parsed: p })
        .collect();
    let mut tables = Vec::new();
    let judged = judge::judge(&inputs, column, &mut tables);
    let mut doc = RunDocument::new(crate::document::CommandName::ImportFlashbench, None);
    if let Some(a) = judged.align {
        doc.results.align.set(a);
    }
    if let Some(a) = judged.open_au {
        doc.results.open_au.set(a);
    }
    if let Some(f) = judged.fat {
        doc.results.fat.set(f);
    }
    if let Some(s) = judged.scatter {
        doc.results.scatter.set(s);
    }
    // The same advice probe draws from the same verdicts.
    let advice = crate::measure::advice::advise(&crate::measure::advice::Measured {
        align: doc.results.align.get(),
        open_au: doc.results.open_au.get(),
        fat: doc.results.fat.get(),
        ..Default::default()
    });
    doc.extras.advice.set(advice);
    for n in judged.notes {
        doc.note(NoteKind::Import, n, None);
    }
    warn_left_out(&mut doc, &parsed);
    doc.extras.device.set(device(
        o,
        &parsed,
        column.and_then(|k| names.first().map(|n| n.2[k].clone())),
    ));
    doc.extras.import.set(Source {
        tool: "flashbench".into(),
        inputs: o.inputs.clone(),
        column: o.column.clone(),
        tables,
    });
    crate::runner::finish_and_save(&mut doc, o.store.as_deref(), o.store_named);
    Ok(doc)
}

/// Every input read and parsed, the `--command` fallback assumed where a
/// table's own command line is missing; an input with no table refused.
fn parse_all(
    inputs: &[String],
    fallback: Option<&flashbench::parse::Invocation>,
) -> CliResult<Vec<(String, flashbench::Parsed)>> {
    let mut parsed = Vec::new();
    for input in inputs {
        let text = read(input)?;
        let mut p = flashbench::parse(&text).map_err(|e| CliError::usage(format!("{input}: {e}")).hint(HINT))?;
        if p.is_empty() {
            return Err(CliError::usage(format!(
                "{input}: no flashbench output in its {} line{}: no -a, --open-au, --find-fat or --scatter table",
                p.lines,
                if p.lines == 1 { "" } else { "s" }
            ))
            .hint(HINT));
        }
        if let Some(f) = fallback {
            p.assume(f);
        }
        parsed.push((input.clone(), p));
    }
    Ok(parsed)
}

/// The card of a table of several side by side (`names`: each such
/// table's input, line and card names): `--column`'s, which must be one
/// of them, and none where no table has several.
fn column_of(column: Option<&str>, names: &[(String, usize, Vec<String>)]) -> CliResult<Option<usize>> {
    Ok(match (column, names.first()) {
        (None, Some((input, line, n))) => {
            return Err(CliError::usage(format!(
                "{input}:{line} is a table of {} cards side by side ({}): one import is one card",
                n.len(),
                n.join(", ")
            ))
            .hint(format!("give --column NAME, for example `--column {}`", n[0])));
        }
        (Some(c), Some((_, _, n))) => match n.iter().position(|x| x == c) {
            Some(k) => Some(k),
            None => {
                return Err(CliError::usage(format!("no column '{c}' in the table"))
                    .hint(format!("the columns are: {}", n.join(", "))));
            }
        },
        (Some(c), None) => {
            return Err(
                CliError::usage(format!("--column {c}: the input has no table of several cards"))
                    .hint("--column picks one card of a table whose header names several; leave it out"),
            );
        }
        (None, None) => None,
    })
}

/// A row cut or broken mid-paste is left out, never read by a guess; the
/// rest of its table stands. So is an option's value the import cannot
/// read (a shell variable, a number past u64), said once a line.
fn warn_left_out(doc: &mut RunDocument, parsed: &[(String, flashbench::Parsed)]) {
    for (input, p) in parsed {
        let invocations = (p.align.iter().filter_map(|a| a.invocation.as_ref()))
            .chain(p.rates.iter().filter_map(|r| r.invocation.as_ref()));
        let mut said = std::collections::BTreeSet::new();
        for inv in invocations.filter(|i| !i.unread.is_empty() && said.insert(i.line)) {
            doc.warnings.push(crate::document::Note {
                kind: NoteKind::Import,
                message: format!(
                    "{input}:{}: flashbench's {} not read (a shell variable, or a number past 2^64): the \
                     tables are judged without it",
                    inv.line,
                    inv.unread.join(", ")
                ),
                hint: None,
            });
        }
        for s in &p.skipped {
            doc.warnings.push(crate::document::Note {
                kind: NoteKind::Import,
                message: format!(
                    "{input}:{}: '{}' is not a whole flashbench row ({}): skipped, the rest imported",
                    s.line,
                    s.text.split_whitespace().collect::<Vec<_>>().join(" "),
                    s.why
                ),
                hint: None,
            });
        }
    }
}

/// The card: a name the user gave, else the CID pasted with the output
/// (the key a flashlab run of the same card has), else the input's name.
fn device(o: &Options, parsed: &[(String, flashbench::Parsed)], column: Option<String>) -> DeviceId {
    let size = parsed.iter().find_map(|p| p.1.size_bytes);
    let shown = size.map_or("size unknown".to_string(), |s| crate::units::Iec(s).to_string());
    if let Some(d) = &o.device {
        return DeviceId {
            key: format!("import:{d}"),
            name: format!("{d}, {shown} (flashbench output)"),
        };
    }
    for (_, p) in parsed {
        if let Some((_, hex)) = &p.cid {
            for family in [Family::Sd, Family::Mmc] {
                if let Ok(Decoded::Cid(c)) = crate::registers::decode(RegisterKind::Cid, family, hex)
                    && c.crc_ok != Some(false)
                {
                    return DeviceId::of_cid(&c, &shown, "flashbench output");
                }
            }
        }
    }
    let what = match column {
        Some(c) => format!("{} column {c}", o.inputs.join(" ")),
        None => o.inputs.join(" "),
    };
    DeviceId {
        key: format!("import:{what}"),
        name: format!("{what}, {shown} (flashbench output)"),
    }
}
