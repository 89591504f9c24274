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
//! read (a paste a forum or mail cut mid-row) is skipped and named, and the
//! rest of its table read; the last row of a table cut before its diff was
//! a user's ^C, and the import says so.

mod invocation;
mod reader;
mod rows;
mod tokens;

pub use invocation::command_line;
pub use reader::parse;

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
/// Most tables of one input: flashbench prints one a run, and a session's
/// log holds a few (the most among `tests/fixtures/flashbench`, 10, is the
/// Kingston blog post's); 4,096 is far past any, and past it each
/// table's note is noise (100,000 one-row tables printed 100,000 notes).
const MAX_TABLES: usize = 1 << 12;

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
    /// The times ("pre", "on", "post", "diff") printed as "1e+03µ" and
    /// read as 1,000 µs.
    pub micro_cut: Vec<&'static str>,
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
    /// Rows that start like flashbench's but do not read, left out.
    pub skipped: Vec<Skipped>,
    /// A flashbench command named in prose ("TEST: wrapper = flashbench
    /// --open-au ..."), not read as the tables' own: its line and options.
    pub mentioned: Option<(usize, String)>,
}

/// A row left out: cut or broken mid-way inside a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// 1-based.
    pub line: usize,
    pub text: String,
    pub why: String,
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
    /// A number outside what any card's run prints (a count of 0, or one
    /// past any table's length).
    OutOfRange { line: usize, what: String },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::OutOfRange { line, what } => {
                write!(f, "line {line}: {what} is outside what any flashbench run prints")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::invocation::shell_number;
    use super::tokens::{Unit, rate, size, time};
    use super::*;

    #[test]
    fn times_sizes_and_rates_read_as_flashbench_prints_them() {
        assert_eq!(time("735µs"), Some((735_000.0, Unit::Printed)));
        assert_eq!(time("1.08ms"), Some((1_080_000.0, Unit::Printed)));
        assert_eq!(time("5.85us"), Some((5850.0, Unit::Printed)));
        assert_eq!(time("1e+03ms"), Some((1e9, Unit::Printed)));
        // "%.3gµs" of 999.5 µs and up, its "s" cut by the 8-byte buffer.
        assert_eq!(time("1e+03µ"), Some((1e6, Unit::MicroCut)));
        assert_eq!(time("1e+03Âµ"), Some((1e6, Unit::MicroCut)));
        assert_eq!(time("5µ"), None, "only 1e+03 fills the buffer before its s");
        assert_eq!(time("-412331"), Some((-412_331.0, Unit::None)));
        assert_eq!(time("-49389n"), Some((-49_389.0, Unit::None)));
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
    fn a_row_cut_at_the_end_is_marked_and_one_broken_inside_is_skipped() {
        let p = parse("align 8192 pre 1ms on 1.2ms post 1ms diff 200µs\nalign 4096 pre 1.04ms\n").unwrap();
        assert_eq!(p.align[0].rows.len(), 1);
        assert_eq!(p.align[0].cut, Some(2));
        assert_eq!(p.skipped, []);
        let p = parse(
            "align 16384 pre 1ms on 1.2ms post 1ms diff 200µs\nalign 8192 pre 1x on 2 post 3 diff 4\n\
             align 4096 pre 1ms on 1.1ms post 1ms diff 100µs\n",
        )
        .unwrap();
        assert_eq!(p.align.len(), 1);
        assert_eq!(
            p.align[0].rows.iter().map(|r| r.boundary).collect::<Vec<_>>(),
            [16384, 4096]
        );
        assert_eq!(
            p.skipped,
            [Skipped {
                line: 2,
                text: "align 8192 pre 1x on 2 post 3 diff 4".into(),
                why: "the pre time '1x' is not a time".into()
            }]
        );
        // Cut before its diff inside the table: the table goes on.
        let p = parse(
            "align 16384 pre 1ms on 1.2ms post 1ms diff 200µs\nalign 8192 pre 1ms on\n\
             align 4096 pre 1ms on 1.1ms post 1ms diff 100µs\n",
        )
        .unwrap();
        assert_eq!((p.align.len(), p.align[0].rows.len(), p.align[0].cut), (1, 2, None));
        assert_eq!(
            (p.skipped[0].line, p.skipped[0].why.as_str()),
            (2, "it is cut off before its diff")
        );
        // A rate row cut mid-rate.
        let p = parse("4MiB 5.91M/s\n2MiB 8.84M/s\n1MiB 10.\n512KiB 13M/s\n").unwrap();
        assert_eq!(
            p.rates[0].rows.iter().map(|r| r.chunk).collect::<Vec<_>>(),
            [4 << 20, 2 << 20, 512 << 10]
        );
        assert_eq!(
            (p.skipped[0].line, p.skipped[0].why.as_str()),
            (3, "it is cut off mid-rate ('10.')")
        );
    }

    /// Rates no size over time gives are named and left out, in a table's
    /// first row, inside it, and between a row's cells, never read as
    /// prose in silence.
    #[test]
    fn rates_that_are_not_numbers_are_skipped_and_named() {
        let p = parse("4MiB nanM/s\n2MiB 5.19M/s\n1MiB -5.19M/s\n512KiB 5.1M/s\n").unwrap();
        let chunks = |p: &Parsed| p.rates[0].rows.iter().map(|r| r.chunk).collect::<Vec<_>>();
        assert_eq!(chunks(&p), [2 << 20, 512 << 10]);
        let why = |p: &Parsed| p.skipped.iter().map(|s| (s.line, s.why.clone())).collect::<Vec<_>>();
        let said = |t: &str| format!("'{t}' is not a rate: a size over a time is a finite number of 0 or more");
        assert_eq!(why(&p), [(1, said("nanM/s")), (3, said("-5.19M/s"))]);
        // find-fat's rows of several rates.
        let p = parse("4MiB 5M/s 5M/s 5M/s\n2MiB 5M/s infM/s 5M/s\n1MiB 5M/s 5M/s 5M/s\n").unwrap();
        assert_eq!(chunks(&p), [4 << 20, 1 << 20]);
        assert_eq!(why(&p), [(2, said("infM/s"))]);
        // Sizes no flashbench prints, and a rate past any number.
        let p = parse("4MiB 5M/s\n99999999GiB 5M/s\n2MiB 1e+308G/s\n1MiB 5M/s\n7PiB 5M/s\n").unwrap();
        assert_eq!(chunks(&p), [4 << 20, 1 << 20]);
        let size = |t: &str| format!("'{t}' is not a size flashbench prints: 1 B to 1 PiB");
        assert_eq!(
            why(&p),
            [(2, size("99999999GiB")), (3, said("1e+308G/s")), (5, size("7PiB"))]
        );
        // Prose with a size in it is still prose.
        assert_eq!(parse("4MiB of data at 5M/s\n").unwrap().skipped, []);
    }

    /// More tables than any session holds are refused, with the line past
    /// the last; lines continued with a backslash are joined in linear
    /// time (80,000 took 7.9 s and 171 MB when each copied those before).
    #[test]
    fn a_flood_of_tables_is_refused() {
        let tables = |n: usize| parse(&"4MiB 5M/s\n".repeat(n)).map(|p| p.rates.len());
        assert_eq!(tables(MAX_TABLES / 2).ok(), Some(MAX_TABLES / 2));
        match tables(2 * MAX_TABLES) {
            Err(ParseError::OutOfRange { what, .. }) => assert_eq!(what, "more than 4096 tables"),
            other => panic!("{other:?}"),
        }
        let joined = parse(&"4MiB 5M/s \\\n".repeat(200_000)).map(|p| p.lines);
        assert!(
            matches!(joined, Err(ParseError::OutOfRange { line: 1, .. })),
            "{joined:?}"
        );
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
