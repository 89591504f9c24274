//! `flashlab completions SHELL`: clap_complete's script, with the built-in
//! simulated cards offered where a command takes one, so `flashlab probe
//! sim:<Tab>` lists them as `flashlab sim list` does.

use clap::CommandFactory;
use clap::builder::PossibleValuesParser;

use super::schema::Cli;

/// The value names of the arguments that take a simulated card: TARGET,
/// emulate's SPEC, `sim show`'s PROFILE, `life --card`.
const TAKE_A_CARD: [&str; 4] = ["TARGET", "SPEC", "PROFILE", "SPEC|RUN_ID"];

/// The completion script for `shell`. zsh's keeps files alone: clap_complete
/// gives an argument with values those values only, and a TARGET is also a
/// path.
pub(super) fn script(shell: clap_complete::Shell) -> String {
    let cards: Vec<String> = crate::sim::profiles::PROFILES
        .iter()
        .map(|p| format!("sim:{}", p.name))
        .collect();
    let mut cmd = if shell == clap_complete::Shell::Zsh {
        Cli::command()
    } else {
        offer_cards(Cli::command(), &cards)
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "flashlab", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `c` and its commands with the cards as the values completed for each
/// argument that takes one. Only for the script: parsing keeps its own
/// parser, which takes paths and `,key=value` overrides too (a shell that
/// falls back to file names, as bash's script asks, still completes
/// /dev/mmcblk0).
fn offer_cards(c: clap::Command, cards: &[String]) -> clap::Command {
    let ids: Vec<clap::Id> = c
        .get_arguments()
        .filter(|a| {
            let name = a.get_value_names().and_then(|n| n.first()).map(ToString::to_string);
            let name = name.unwrap_or_else(|| a.get_id().as_str().to_uppercase());
            TAKE_A_CARD.contains(&name.as_str())
        })
        .map(|a| a.get_id().clone())
        .collect();
    let mut c = c;
    for id in ids {
        c = c.mut_arg(id, |a| a.value_parser(PossibleValuesParser::new(cards.to_vec())));
    }
    c.mut_subcommands(|s| offer_cards(s, cards))
}
