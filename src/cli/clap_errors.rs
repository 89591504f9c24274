//! clap's errors, rewritten: its message as it wraps on a terminal, a
//! hint that names the help that answers instead of its generic one, and
//! with --json one document on stdout as for any failed command.

use super::{error_document, print};

/// Print clap's refusal of the command line (or its --help and --version)
/// and return the exit code.
pub(super) fn report(e: clap::Error) -> i32 {
    let command = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    // The option clap refused, where it names one: the hint points
    // at its help (a second, generic hint under clap's
    // own "try '--help'").
    let arg = e
        .get(clap::error::ContextKind::InvalidArg)
        .map(|a| a.to_string())
        .and_then(|a| a.split_whitespace().next().map(str::to_string))
        .filter(|a| a.starts_with('-') || a.starts_with('<'));
    // The command as typed, subcommand included (`results show`).
    let words: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .take_while(|a| a.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .take(2)
        .collect();
    use clap::error::ErrorKind;
    let hint = match (e.kind(), &arg, command.is_empty()) {
        (ErrorKind::InvalidValue | ErrorKind::ValueValidation, Some(a), false) => {
            format!("`flashlab {} --help` describes {a}", words.join(" "))
        }
        (ErrorKind::UnknownArgument, _, false) => format!("`flashlab {command} --help` lists its options"),
        _ => "`flashlab --help` lists the commands, `flashlab COMMAND --help` their options".to_string(),
    };
    // --json asked for one document even for a bad command line.
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json" || a == "--format=json")
        || args.windows(2).any(|w| w[0] == "--format" && w[1] == "json");
    if e.use_stderr() && json {
        let err = crate::error::CliError::usage(e.kind().to_string()).hint(hint.clone());
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
