//! clap's errors, rewritten: its message as it wraps on a terminal, a
//! hint that names the help that answers instead of its generic one, and
//! with --json one document on stdout as for any failed command.

use super::{error_document, print};

/// Print clap's refusal of the command line (or its --help and --version)
/// and return the exit code.
pub(super) fn report(e: clap::Error) -> i32 {
    // Lossy: an argument that is not UTF-8 is what clap refuses here
    // (`std::env::args` panicked on it).
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    // The command as typed, subcommand included (`results show`).
    let words = typed_command(&args);
    // A word clap did not know as a command is still what was typed.
    let command = words
        .first()
        .cloned()
        .or_else(|| args.iter().skip(1).find(|a| !a.starts_with('-')).cloned())
        .unwrap_or_default();
    // The option clap refused, where it names one: the hint points
    // at its help (a second, generic hint under clap's
    // own "try '--help'").
    let arg = e
        .get(clap::error::ContextKind::InvalidArg)
        .map(|a| a.to_string())
        .and_then(|a| a.split_whitespace().next().map(str::to_string))
        .filter(|a| a.starts_with('-') || a.starts_with('<'));
    // A simulated card clap refused: emulate's SPEC, sim show's PROFILE,
    // or a TARGET that names one.
    let card = match e.get(clap::error::ContextKind::InvalidArg).map(|a| a.to_string()) {
        Some(a) if a == "[SPEC]" || a == "<PROFILE>" => true,
        Some(a) if a == "[TARGET]" => e
            .get(clap::error::ContextKind::InvalidValue)
            .is_some_and(|v| v.to_string().starts_with("sim:")),
        _ => false,
    };
    use clap::error::ErrorKind;
    let hint = match (e.kind(), &arg, command.is_empty()) {
        (ErrorKind::ValueValidation, _, false) if card => {
            "`flashlab sim list` names the profiles; `flashlab sim show PROFILE --toml` lists every key".to_string()
        }
        (ErrorKind::InvalidValue | ErrorKind::ValueValidation, Some(a), false) => {
            format!("`flashlab {} --help` describes {a}", words.join(" "))
        }
        (ErrorKind::UnknownArgument, _, false) if !words.is_empty() => {
            format!("`flashlab {} --help` lists its options", words.join(" "))
        }
        _ => "`flashlab --help` lists the commands, `flashlab COMMAND --help` their options".to_string(),
    };
    // --json asked for one document even for a bad command line.
    let json = args.iter().any(|a| a == "--json" || a == "--format=json")
        || args.windows(2).any(|w| w[0] == "--format" && w[1] == "json");
    if e.use_stderr() && json {
        // clap's own words, as the text below prints them ("invalid value
        // 'sim:demo,au_sise=4M' for '[TARGET]': ... unknown key 'au_sise'"),
        // not only its kind.
        let rendered = e.render().to_string();
        let message = rendered
            .lines()
            .next()
            .map(|l| l.trim_start_matches("error: ").trim().to_string())
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| e.kind().to_string());
        let err = crate::error::CliError::usage(message).hint(hint.clone());
        print(
            &error_document(crate::document::CommandName::parse(&command), &err),
            &crate::format::json::Json,
        );
    }
    // clap's own message; usage errors exit 2, --help/--version 0.
    // An error goes through stderr's writer, which wraps it between
    // words on a terminal ("give 4M, 8M, 12|M").
    // Its "For more information, try '--help'." gives way to the
    // hint below, which names the help that answers (two
    // hints, one generic).
    if e.use_stderr() {
        let text = e.render().to_string();
        let own: Vec<&str> = text
            .trim_end()
            .lines()
            .filter(|l| !l.starts_with("For more information, try"))
            .collect();
        crate::errln!("{}", own.join("\n").trim_end());
    } else {
        let _ = e.print();
    }
    if e.use_stderr() {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            crate::errln!("{}", crate::console::wrap(&hint, "hint: ", "  "));
        } else {
            crate::errln!("hint: {hint}");
        }
    }
    e.exit_code()
}

/// The command and its subcommands as typed (`bench`, `results show`):
/// the words that name clap's commands, each in the one before, so an
/// option's value (`--preset fast`) or a TARGET is never taken for one.
fn typed_command(args: &[String]) -> Vec<String> {
    use clap::CommandFactory;
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    for a in args.iter().skip(1) {
        let Some(sub) = cmd.find_subcommand(a).cloned() else {
            continue;
        };
        out.push(sub.get_name().to_string());
        if !sub.has_subcommands() {
            break;
        }
        cmd = sub;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_typed_is_its_words_not_an_options_value() {
        let words = |line: &str| super::typed_command(&line.split(' ').map(String::from).collect::<Vec<_>>());
        assert_eq!(words("flashlab bench --preset fast"), ["bench"]);
        assert_eq!(words("flashlab --format json results show 3 --x"), ["results", "show"]);
        assert_eq!(words("flashlab probe sim:demo --engine foo"), ["probe"]);
        assert_eq!(words("flashlab nosuch"), Vec::<String>::new());
    }
}
