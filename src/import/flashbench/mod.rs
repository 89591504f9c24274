//! `import flashbench`: flashbench's printed tables ([`parse`]) judged as
//! flashlab judges its own runs ([`judge`]), and flashlab's simulated cards
//! printed as flashbench would print them ([`render`]), so the reading is
//! tested on cards whose truth is known.

pub mod judge;
pub mod parse;
pub mod render;
pub mod score;

use serde::{Deserialize, Serialize};

pub use parse::{DEFAULT_BLOCKSIZE, DEFAULT_ERASESIZE, DEFAULT_OPEN_AU_NR, ParseError, Parsed, parse};

/// Where an imported run came from, under `import` in its document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// "flashbench".
    pub tool: String,
    /// The inputs, as named on the command line ("-" for stdin).
    pub inputs: Vec<String>,
    /// The column taken from a table of several cards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// Every table found, in order.
    pub tables: Vec<Table>,
}

/// One table found in an input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub input: String,
    /// 1-based line of its first row.
    pub line: usize,
    /// "align", "open-au", "open-au --random", "find-fat", "scatter", or
    /// "columns" (several cards side by side).
    pub kind: String,
    pub rows: usize,
    /// The flashbench command line pasted with it.
    pub command: Option<String>,
    /// The line of a row cut off mid-way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_at_line: Option<usize>,
}

impl Table {
    fn new(
        input: &str,
        line: usize,
        kind: &str,
        rows: usize,
        inv: Option<&parse::Invocation>,
        cut: Option<usize>,
    ) -> Table {
        Table {
            input: input.to_string(),
            line,
            kind: kind.to_string(),
            rows,
            command: inv.map(|i| i.text.clone()),
            cut_at_line: cut,
        }
    }
}
