//! The argument groups every command shares, checked by clap when the
//! command line is parsed (ripgrep's habit: validate first, resolve
//! later): TARGET as a path or a simulated card, the I/O engine and the
//! results store ([`Common`]), and a writing test's consent ([`WriteArgs`]).
//! No device is opened here; a simulated card's profile file is read,
//! since a card is data and its checks are the parse.
//! Each measuring test flattens them into its own arguments; the CLI
//! resolves them once into what the runner needs.

use std::path::PathBuf;

use crate::safety::ranges::Range;
use crate::targets::real::EngineChoice;
use crate::targets::spec::TargetSpec;

/// A size argument (`4M`, `16KiB`, `0x1000`), checked at parse time.
pub fn size(text: &str) -> Result<u64, String> {
    crate::units::parse_size(text).map_err(|e| e.to_string())
}

/// An erase size: whole multiples of 16 KiB, the smallest allocation unit
/// an SD card can declare (SD Physical Layer spec 4.10.2, AU_SIZE; eMMC
/// erase groups are multiples of 512 KiB), checked before anything runs
/// (`--erase-size 5000` was taken and failed mid-run).
pub fn erase_size(text: &str) -> Result<u64, String> {
    match size(text)? {
        0 => Err("an erase size of 0 bytes cannot be; give 4M, 8M ...".into()),
        n if !n.is_multiple_of(16 << 10) => Err(format!(
            "{n} bytes is not a whole number of 16 KiB, the smallest allocation unit a card can have; give \
             4M, 8M, 12M ..."
        )),
        n => Ok(n),
    }
}

/// A stored run's id (`results show abc` said "invalid digit
/// found in string").
pub fn run_id(text: &str) -> Result<i64, String> {
    match text.parse::<i64>() {
        Ok(n) if n >= 1 => Ok(n),
        // Short: clap prints it after "invalid value 'abc' for '<ID>': ",
        // unwrapped.
        _ => Err("not a run id; see `flashlab results list`".into()),
    }
}

/// An `OFFSET+LENGTH` argument, checked at parse time.
pub fn range(text: &str) -> Result<Range, String> {
    crate::safety::ranges::parse(text).map_err(|e| e.to_string())
}

/// TARGET as the user typed it (for the document and messages) and as
/// resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetArg {
    pub text: String,
    pub resolved: Resolved,
}

/// What a TARGET names: a path, opened only when the run starts, or a
/// simulated card with every parameter settled (its profile read, its
/// overrides applied and checked), so that a bad card is refused before
/// anything runs and nothing parses its spec again.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    Path(PathBuf),
    Sim(Box<crate::sim::params::Params>),
}

impl TargetArg {
    /// The built-in simulated card, taken when no TARGET is given.
    pub fn default_card() -> TargetArg {
        target(crate::targets::spec::DEFAULT_TARGET).expect("the default target resolves")
    }
}

/// clap's value parser for TARGET.
pub fn target(text: &str) -> Result<TargetArg, String> {
    let resolved = match TargetSpec::parse(text) {
        Ok(TargetSpec::Path(path)) => Resolved::Path(path),
        Ok(card) => Resolved::Sim(card_params(text, card)?),
        Err(e) => {
            return Err(format!(
                "bad target '{text}': {e} (a TARGET is a block device such as /dev/mmcblk0, a regular file, or \
                 sim:PROFILE[,key=value...])"
            ));
        }
    };
    Ok(TargetArg {
        text: text.to_string(),
        resolved,
    })
}

/// A simulated card as typed (`sim:` may be left off) and resolved: what
/// emulate's SPEC and `sim show`'s PROFILE take, and TARGET where it is a
/// card.
#[derive(Debug, Clone, PartialEq)]
pub struct SimCard {
    /// As typed.
    pub text: String,
    pub params: Box<crate::sim::params::Params>,
}

impl SimCard {
    /// The spec with its `sim:`, as documents and messages name a card.
    pub fn spec(&self) -> String {
        with_sim(&self.text)
    }

    /// The profile it starts from (a built-in name or a .toml file).
    pub fn base(&self) -> &str {
        self.text
            .trim_start_matches("sim:")
            .split(',')
            .next()
            .unwrap_or_default()
    }
}

/// `life --card`: a simulated card, or a stored probe of a real one.
#[derive(Debug, Clone, PartialEq)]
pub enum Card {
    Sim(SimCard),
    /// A stored run's id (`flashlab results list`).
    Run(i64),
}

/// clap's value parser for `life --card`: digits are a run's id, anything
/// else a SPEC.
pub fn card(text: &str) -> Result<Card, String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return run_id(text).map(Card::Run);
    }
    sim_card(text).map(Card::Sim)
}

/// clap's value parser for a SPEC or PROFILE.
pub fn sim_card(text: &str) -> Result<SimCard, String> {
    let spec = TargetSpec::parse(&with_sim(text)).map_err(|e| format!("bad simulated card '{text}': {e}"))?;
    Ok(SimCard {
        text: text.to_string(),
        params: card_params(text, spec)?,
    })
}

/// A parsed card's every parameter: its profile read, its overrides
/// applied and checked.
fn card_params(text: &str, spec: TargetSpec) -> Result<Box<crate::sim::params::Params>, String> {
    let bad = |e: String| format!("bad simulated card '{text}': {e}");
    match spec {
        TargetSpec::Sim { base, overrides } => crate::sim::params_from_spec(&base, &overrides)
            .map(Box::new)
            .map_err(|e| bad(e.to_string())),
        TargetSpec::Path(_) => Err(bad("not a simulated card".into())),
    }
}

fn with_sim(text: &str) -> String {
    if text.starts_with("sim:") {
        text.to_string()
    } else {
        format!("sim:{text}")
    }
}

/// `--engine`: clap's side of [`EngineChoice`] (the target layer knows
/// nothing of clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    Auto,
    Psync,
    #[value(name = "io_uring")]
    IoUring,
}

impl From<Engine> for EngineChoice {
    fn from(e: Engine) -> Self {
        match e {
            Engine::Auto => EngineChoice::Auto,
            Engine::Psync => EngineChoice::Psync,
            Engine::IoUring => EngineChoice::IoUring,
        }
    }
}

/// Where a measuring command runs, how it reads and writes a real target,
/// and where its run is saved.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// A block device (/dev/mmcblk0), a regular file, or
    /// sim:PROFILE[,key=value...] (default: sim:demo, the built-in
    /// simulated card; `flashlab sim list` names the others).
    #[arg(value_name = "TARGET", value_parser = target)]
    pub target: Option<TargetArg>,
    #[command(flatten)]
    pub engine: EngineOpt,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The name the run is listed and compared by: the card's sticker, a
    /// shelf slot ("shelf-3"). Eight cards through one reader are all
    /// /dev/sdX; `flashlab results list --label` finds them again.
    #[arg(long, value_name = "TEXT", value_parser = label)]
    pub label: Option<String>,
    /// Say each step as it ends (device-seconds and wall time) and what a
    /// simulated card will write.
    #[arg(short, long)]
    pub verbose: bool,
}

/// The longest label a run keeps: a sticker or a slot name, not a note.
pub const MAX_LABEL: usize = 64;

/// A run's `--label` (or a batch's): printable, on one line, and short
/// enough to head a column.
pub fn label(text: &str) -> Result<String, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("a label has at least one character that is not a space".into());
    }
    if t.chars().count() > MAX_LABEL {
        return Err(format!("a label has at most {MAX_LABEL} characters"));
    }
    if t.chars().any(char::is_control) {
        return Err("a label is one line of printable text".into());
    }
    Ok(t.to_string())
}

/// Where a run is saved: every command that keeps its answer takes these.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StoreArgs {
    /// The results store the run is saved in: a SQLite file, or a fleet's
    /// postgres:// URL, kept locally first (default: $FLASHLAB_DB, else
    /// $XDG_DATA_HOME/flashlab/results.sqlite).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Do not save the run in the results store.
    #[arg(long)]
    pub no_store: bool,
}

/// The I/O engine alone, for commands that touch a real target but save
/// no run (restore, debug write-pattern), and with the rest of a command's
/// options for those that do.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineOpt {
    /// I/O engine: psync, io_uring, or auto (io_uring when the queue depth is
    /// above 1) [default: auto].
    #[arg(long, value_enum)]
    pub engine: Option<Engine>,
}

/// Options every writing command takes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WriteArgs {
    /// Consent to writing to a real device or file (its data is preserved and
    /// restored unless --no-preserve).
    #[arg(long)]
    pub write: bool,
    /// Keep no journal: the written ranges are destroyed.
    #[arg(long)]
    pub no_preserve: bool,
    /// Where the preservation journal goes (default: /var/lib/flashlab/journals
    /// for root, else $XDG_STATE_HOME/flashlab/journals).
    #[arg(long, value_name = "DIR", value_parser = journal_dir)]
    pub journal_dir: Option<PathBuf>,
    /// Device-seconds each writing step may take (default 180). A step
    /// that has no answer when its budget ends says "unsure: stopped after
    /// N device-seconds" and what it saw.
    #[arg(long, value_name = "SECONDS", value_parser = budget)]
    pub budget: Option<f64>,
}

/// A journal directory, UTF-8: its path is kept in each journal's
/// header and in the pending register, both JSON, so a path that is not
/// UTF-8 is refused here (clap says so, exit 2) rather than found
/// unwritable mid-run (a panic once, with the directory already made).
pub fn journal_dir(s: &str) -> Result<PathBuf, String> {
    Ok(PathBuf::from(s))
}

/// `--budget SECONDS`: a positive number of seconds, at most a week.
pub fn budget(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 7.0 * 86400.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a budget: give device-seconds, more than 0 and at most 604800 (a week)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_is_resolved_when_parsed() {
        let t = target("sim:demo,au_size=8M").unwrap();
        let Resolved::Sim(p) = &t.resolved else { panic!("{t:?}") };
        assert_eq!((t.text.as_str(), p.au_size), ("sim:demo,au_size=8M", 8 << 20));
        assert_eq!(
            target("/dev/mmcblk0").unwrap().resolved,
            Resolved::Path("/dev/mmcblk0".into())
        );
        let e = target("sim:demo,au_sise=8M").unwrap_err();
        assert!(e.contains("unknown key 'au_sise'"), "{e}");
        assert!(target("sim:nosuch").unwrap_err().contains("unknown profile 'nosuch'"));
    }

    #[test]
    fn a_spec_or_profile_may_leave_off_sim() {
        let c = sim_card("kingston-sa04g,capacity=256M").unwrap();
        assert_eq!(
            (c.spec(), c.base()),
            ("sim:kingston-sa04g,capacity=256M".to_string(), "kingston-sa04g")
        );
        assert_eq!(c.params.capacity, 256 << 20);
        assert_eq!(sim_card("sim:demo").unwrap().params, sim_card("demo").unwrap().params);
        assert!(sim_card("/dev/sda").unwrap_err().contains("unknown profile"));
    }
}
