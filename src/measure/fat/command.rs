//! `flashlab fat`: its arguments and its steps (align first for the erase
//! size, unless --erase-size gives it).

use super::{DEFAULT_AUS, Fat};
use crate::measure::registry::Session;
use crate::measure::registry::Steps;
use crate::measure::session::geometry;

/// How many leading AUs take small random writes cheaply (the FAT area;
/// writes, preserved unless --no-preserve).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab fat /dev/mmcblk0 --write
  flashlab fat sim:demo --open-aus 24")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
    /// The erase size (AU) the area is counted in (default: align's
    /// estimate).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::erase_size)]
    pub erase_size: Option<u64>,
    /// Leading AUs examined (1 to 256).
    #[arg(long, default_value_t = DEFAULT_AUS,
          value_parser = clap::value_parser!(u64).range(1..=super::MAX_AUS))]
    pub max: u64,
    /// The card's random-write open-AU limit (open-au's "random" answer):
    /// each AU is then written beside that many ordinary AUs, which tells
    /// a FAT area apart even on slow hosts and under noise (1 to 32).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=super::MAX_SLOT_AUS))]
    pub open_aus: Option<u64>,
    #[command(flatten)]
    pub write: crate::args::WriteArgs,
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        let g = geometry(s, self.erase_size)?;
        let test = Fat::on(&g, self.max, self.open_aus, s.medium());
        s.run(&test)?;
        Ok(())
    }
}
