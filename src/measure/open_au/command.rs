//! `flashlab open-au`: its arguments and its steps (align first for the
//! erase size, unless --erase-size gives it).

use super::{Choices, OpenAu};
use crate::measure::registry::Session;
use crate::measure::registry::Steps;
use crate::measure::session::geometry;

/// How many AUs the card keeps open for in-order and random writes: an
/// automatic sweep that stops each run once it collapses (writes; the data
/// is preserved unless --no-preserve).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab open-au /dev/mmcblk0 --write           preserved: journalled and restored
  flashlab open-au sim:demo --random --max 8
  flashlab open-au /dev/sdb --write --full        flashbench's whole table")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
    /// Only the random-order sweep (flashbench --open-au --random).
    #[arg(long, conflicts_with = "linear")]
    pub random: bool,
    /// Only the in-order sweep.
    #[arg(long)]
    pub linear: bool,
    /// Erase size (default: align's estimate).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::erase_size)]
    pub erase_size: Option<u64>,
    /// Chunk written by the sweep (default: the page, doubled while the AU
    /// holds more than 4096 of them).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size)]
    pub chunk: Option<u64>,
    /// Most open AUs tried (default: 32, or the most whose AUs fit on
    /// the target; given explicitly, a sweep that does not fit is refused).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=super::MAX_OPEN_AUS))]
    pub max: Option<u64>,
    /// Also every chunk size from the erase size down, at one AU, at the
    /// limit and one past it (flashbench's table).
    #[arg(long)]
    pub full: bool,
    #[command(flatten)]
    pub write: crate::args::WriteArgs,
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        let g = geometry(s, self.erase_size)?;
        let choices = Choices {
            chunk: self.chunk,
            max: self.max,
            random_only: self.random,
            linear_only: self.linear,
            full: self.full,
        };
        let test = OpenAu::on(&g, choices, Vec::new(), s.medium());
        s.run(&test)?;
        Ok(())
    }
}
