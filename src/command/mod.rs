//! Each command's sequence, above the runner: a measuring test's own steps
//! come from its folder through the registry ([`test`]); `info`, `probe`
//! ([`probe`]) and the commands that measure nothing (`decode` and `sim`
//! in [`offline`], [`restore`], [`results`], [`debug`]) are here. Each
//! returns the run document the formats print.

pub mod batch;
pub mod debug;
pub mod emulate;
pub mod import;
pub mod life;
mod life_card;
pub mod offline;
pub mod probe;
#[cfg(test)]
mod property_tests;
pub mod restore;
pub mod results;
pub mod trace;

use crate::document::RunDocument;
use crate::error::CliResult;
use crate::measure::TestCommand;
use crate::runner::{Resolved, Runner};

/// A measuring test's command: its own steps, through the runner.
pub fn test(cmd: &TestCommand, r: &Resolved) -> CliResult<RunDocument> {
    let mut runner = Runner::new(crate::document::CommandName::Test(cmd.test_name()), r)?;
    cmd.run(&mut runner)?;
    Ok(runner.finish())
}

/// `info`: identification only. `registers`: the text lists every register
/// field, not only the summary.
pub fn info(r: &Resolved, registers: bool) -> CliResult<RunDocument> {
    let mut runner = Runner::new(crate::document::CommandName::Info, r)?;
    let info = runner.identify()?;
    runner.doc().extras.info.set(info);
    runner.publish();
    let mut doc = runner.finish();
    doc.detail = registers;
    Ok(doc)
}
