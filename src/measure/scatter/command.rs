//! `flashlab scatter`: its arguments and its one step.

use super::Scatter;
use crate::measure::registry::Session;
use crate::measure::registry::Steps;

/// Read latency of every block of a region, in order (read-only).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  flashlab scatter /dev/mmcblk0 --length 16M
  flashlab scatter sim:demo --csv > map.csv")]
pub struct Args {
    #[command(flatten)]
    pub common: crate::args::Common,
    /// Where the map starts.
    #[arg(long, value_name = "OFFSET", default_value = "0", value_parser = crate::args::size)]
    pub offset: u64,
    /// How many bytes it covers.
    #[arg(long, value_name = "LENGTH", default_value = "8M", value_parser = crate::args::size)]
    pub length: u64,
    /// Read size (default: 4 KiB or the logical block).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size)]
    pub block: Option<u64>,
    /// Every point as CSV (offset_bytes,latency_ns) on stdout.
    #[arg(long)]
    pub csv: bool,
}

impl Steps for Args {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error> {
        s.run(&Scatter {
            offset: self.offset,
            length: self.length,
            block: self.block,
        })?;
        Ok(())
    }
}
