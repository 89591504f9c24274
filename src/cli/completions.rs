//! `flashlab completions SHELL`: clap_complete's script, with the built-in
//! simulated cards offered where a command takes one, so `flashlab probe
//! sim:<Tab>` lists them as `flashlab sim list` does.

use clap::CommandFactory;
use clap::builder::PossibleValuesParser;

use super::schema::Cli;

/// The value names of the arguments that take a simulated card: TARGET,
/// emulate's SPEC, `sim show`'s PROFILE, `life --card`.
const TAKE_A_CARD: [&str; 4] = ["TARGET", "SPEC", "PROFILE", "SPEC|RUN_ID"];

/// Whether `a` takes a simulated card, by its value name.
fn takes_a_card(a: &clap::Arg) -> bool {
    let name = a.get_value_names().and_then(|n| n.first()).map(ToString::to_string);
    let name = name.unwrap_or_else(|| a.get_id().as_str().to_uppercase());
    TAKE_A_CARD.contains(&name.as_str())
}

/// The completion script for `shell`.
pub(super) fn script(shell: clap_complete::Shell) -> String {
    let cards: Vec<String> = crate::sim::profiles::PROFILES
        .iter()
        .map(|p| format!("sim:{}", p.name))
        .collect();
    let mut cmd = offer_cards(Cli::command(), &cards);
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "flashlab", &mut out);
    let script = String::from_utf8_lossy(&out).into_owned();
    match shell {
        clap_complete::Shell::Bash => whole_words(&script),
        clap_complete::Shell::Fish => script + &fish_cards(&Cli::command(), &[], &cards),
        clap_complete::Shell::Zsh => zsh_cards_or_files(&script, &cards),
        clap_complete::Shell::Elvish | clap_complete::Shell::PowerShell | _ => script,
    }
}

/// clap's zsh script completes an argument with values to those values
/// only, where a TARGET is also a path: each place that lists the cards
/// calls a function instead, which offers the cards (with what `sim list`
/// says of each) and files beside them.
fn zsh_cards_or_files(script: &str, cards: &[String]) -> String {
    // The list as clap_complete writes it: colons escaped (its
    // `escape_value`; card names are otherwise letters, digits and '-').
    let listed = format!("({})", cards.join(" ").replace(':', "\\:"));
    let described: Vec<String> = crate::sim::profiles::PROFILES
        .iter()
        .map(|p| format!("        'sim\\:{}:{}'", p.name, p.summary.replace('\'', "'\\''")))
        .collect();
    let functions = format!(
        r#"(( $+functions[_flashlab_card_names] )) ||
_flashlab_card_names() {{
    local -a cards
    cards=(
{}
    )
    _describe -t cards 'simulated card' cards
}}

(( $+functions[_flashlab_cards] )) ||
_flashlab_cards() {{
    _alternative 'cards:simulated card:_flashlab_card_names' 'files:file:_files'
}}

"#,
        described.join("\n")
    );
    let script = script.replace(&listed, "_flashlab_cards");
    // Before the lines that run or register `_flashlab`, which is
    // called as the file is loaded.
    match script.find("if [ \"$funcstack[1]\" = \"_flashlab\" ]") {
        Some(at) => format!("{}{functions}{}", &script[..at], &script[at..]),
        None => script + &functions,
    }
}

/// bash splits `sim:demo` at the colon (`COMP_WORDBREAKS`), so clap's
/// function sees `sim`, `:`, `de` and completes `de` against
/// `sim:demo`: nothing, or `sim:sim:demo` after a bare `sim:`. Its
/// `complete` line goes to a wrapper that joins again the words bash split
/// at a colon with no blank between them (as bash-completion's
/// `__reassemble_comp_words_by_ref` does, without needing it), keeping
/// bash's own words otherwise, so a quoted word with a blank in it stays
/// one word; then it leaves in each answer only what follows the last
/// colon of the word, the part bash replaces.
fn whole_words(script: &str) -> String {
    const WRAPPER: &str = r#"
_flashlab_whole_words() {
    local rest="${COMP_LINE:0:COMP_POINT}" w trimmed
    local -a words=()
    local i j=-1
    for (( i = 0; i <= COMP_CWORD && i < ${#COMP_WORDS[@]}; i++ )); do
        w="${COMP_WORDS[i]}"
        trimmed="${rest#"${rest%%[![:space:]]*}"}"
        if (( i == COMP_CWORD )); then
            w="${w:0:${#trimmed}}"
        fi
        if (( j >= 0 )) && [[ "$trimmed" == "$rest" ]] && [[ "$w" == ":" || "${words[j]}" == *: ]]; then
            words[j]+="$w"
        else
            words+=("$w")
            j=$(( j + 1 ))
        fi
        rest="${trimmed:${#w}}"
    done
    if (( j < 0 )); then
        words=("")
        j=0
    fi
    local cur="${words[j]}" prev=""
    if (( j > 0 )); then
        prev="${words[j-1]}"
    fi
    COMP_WORDS=("${words[@]}")
    COMP_CWORD=$j
    _flashlab "$1" "$cur" "$prev"
    if [[ "$cur" == *:* ]]; then
        COMPREPLY=( "${COMPREPLY[@]#"${cur%:*}:"}" )
    fi
}
"#;
    let mut out = String::with_capacity(script.len() + WRAPPER.len());
    let mut wrapped = false;
    for line in script.lines() {
        if line.trim_start().starts_with("complete -F _flashlab ") {
            out.push_str(&line.replacen("-F _flashlab ", "-F _flashlab_whole_words ", 1));
        } else {
            out.push_str(line);
        }
        out.push('\n');
        // After clap's function, whose body ends at the first line "}".
        if line == "}" && !wrapped {
            out.push_str(WRAPPER);
            wrapped = true;
        }
    }
    out
}

/// clap's fish script completes options only; one line per command whose
/// argument takes a card offers the cards there, files still offered
/// beside them (a TARGET is also a path).
fn fish_cards(c: &clap::Command, path: &[&str], cards: &[String]) -> String {
    let mut out = String::new();
    if let (true, Some((first, rest))) = (c.get_positionals().any(takes_a_card), path.split_first()) {
        let mut when = format!("__fish_flashlab_using_subcommand {first}");
        for sub in rest {
            when.push_str(&format!("; and __fish_seen_subcommand_from {sub}"));
        }
        out.push_str(&format!(
            "complete -c flashlab -n \"{when}\" -a \"{}\"\n",
            cards.join(" ")
        ));
    }
    for sub in c.get_subcommands() {
        let mut deeper = path.to_vec();
        deeper.push(sub.get_name());
        out.push_str(&fish_cards(sub, &deeper, cards));
    }
    out
}

/// `c` and its commands with the cards as the values completed for each
/// argument that takes one. Only for the script: parsing keeps its own
/// parser, which takes paths and `,key=value` overrides too (a shell that
/// falls back to file names, as bash's script asks, still completes
/// /dev/mmcblk0).
fn offer_cards(c: clap::Command, cards: &[String]) -> clap::Command {
    let ids: Vec<clap::Id> = c
        .get_arguments()
        .filter(|a| takes_a_card(a))
        .map(|a| a.get_id().clone())
        .collect();
    let mut c = c;
    for id in ids {
        c = c.mut_arg(id, |a| a.value_parser(PossibleValuesParser::new(cards.to_vec())));
    }
    c.mut_subcommands(|s| offer_cards(s, cards))
}
