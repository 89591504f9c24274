//! `flashlab page`: its arguments and its steps (align first, for the
//! region, unless --erase-size gives it).

use super::{DEFAULT_REGION, Page};
use crate::measure::align::Align;
use crate::measure::registry::Session;
use crate::measure::registry::Steps;

/// The flash page size from writes that straddle page boundaries (a
/// second page programmed), where align's reads cannot show it; writes in
/// the last whole AU of the target, preserved unless --no-preserve.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab page /dev/mmcblk0 --write
  flashlab page sim:demo --erase-size 4M")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
    /// The region written (default: align's erase size, else 4 MiB).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::erase_size)]
    pub erase_size: Option<u64>,
    #[command(flatten)]
    pub write: crate::args::WriteArgs,
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        let medium = s.medium();
        let erase = match self.erase_size {
            Some(e) => e,
            None => {
                let a = s.run(&Align {
                    references: Vec::new(),
                    medium: medium.clone(),
                })?;
                a.erase_size_bytes.unwrap_or(DEFAULT_REGION)
            }
        };
        let test = Page::at_end(s.description(), erase, medium);
        s.run(&test)?;
        Ok(())
    }
}
