//! `flashlab align`: its arguments and its one step.

use super::Align;
use crate::measure::registry::Session;
use crate::measure::registry::Steps;

/// Erase-block (AU) and page size from read latencies at 2^n and 3x2^n
/// boundaries, with a confidence (read-only).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab align /dev/mmcblk0        reads only
  flashlab align sim:kingston-sa04g  a simulated 2013 card")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        let test = Align {
            references: s.references(),
            medium: s.medium(),
        };
        s.run(&test)?;
        Ok(())
    }
}
