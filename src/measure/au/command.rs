//! `flashlab au`: its arguments and its one step.

use super::Au;
use crate::measure::registry::Session;
use crate::measure::registry::Steps;

/// The erase size (AU) from writes: two regions in one AU share one of
/// the card's random-write slots, two AUs need two; for when align's reads
/// cannot show it. Writes small windows across the target, preserved
/// unless --no-preserve.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab au /dev/mmcblk0 --write
  flashlab au sim:kingston-sa04g --open-aus 3")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
    /// The card's random-write open-AU limit if known (open-au's or fat's),
    /// tried first.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=crate::measure::slot_writer::MAX_SLOT_AUS))]
    pub open_aus: Option<u64>,
    #[command(flatten)]
    pub write: crate::args::WriteArgs,
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        let mut t = Au::over(s.description(), s.medium());
        t.options.random_aus = self.open_aus;
        s.run(&t)?;
        Ok(())
    }
}
