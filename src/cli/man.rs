//! The manual pages: flashlab(1) and one page per command, rendered by
//! clap_mangen from the same clap definitions as --help.

use super::Output;
use super::schema::Cli;
use crate::error::CliResult;

/// Every page's command: flashlab itself, then each visible command and
/// its own commands, named as the pages cite each other (flashlab-probe,
/// flashlab-results-list).
/// (page name, the command as typed, the command).
type Page = (String, String, clap::Command);

fn man_pages() -> Vec<Page> {
    use clap::CommandFactory;
    fn walk(prefix: &str, typed: &str, c: &clap::Command, out: &mut Vec<Page>) {
        for sub in c
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        {
            let name = format!("{prefix}-{}", sub.get_name());
            let typed = format!("{typed} {}", sub.get_name());
            // The page's title and its citations of its own commands
            // (clap_mangen names them display name, dash, command); the
            // synopsis as typed.
            // NAME is the help's first clause, DESCRIPTION all of it and
            // where the rest is (a DESCRIPTION that repeated NAME
            // word for word).
            let about = sub
                .get_long_about()
                .or(sub.get_about())
                .map(ToString::to_string)
                .unwrap_or_default();
            let first = first_clause(&about);
            let description = format!(
                "{about}\n\nEvery option is below, and examples after them; --json, --db and the I/O engines are \
                 described in flashlab(1) and README.md."
            );
            let page = sub
                .clone()
                .override_usage(synopsis(sub, &typed))
                .display_name(name.clone())
                .bin_name(typed.clone())
                .about(first)
                .long_about(description)
                .version(env!("CARGO_PKG_VERSION"))
                .disable_help_subcommand(true);
            out.push((name.clone(), typed.clone(), page));
            walk(&name, &typed, sub, out);
        }
    }
    // No page for clap's `help` command, so none cited. Built, so each
    // command's page has the global options (--json, --format) it takes.
    let mut top = Cli::command().disable_help_subcommand(true);
    top.build();
    let page = top.clone().override_usage(synopsis(&top, "flashlab"));
    let mut out = vec![("flashlab".to_string(), "flashlab".to_string(), page)];
    walk("flashlab", "flashlab", &top, &mut out);
    out
}

/// A page's SYNOPSIS: every option with what it takes, its values where
/// clap knows them (`--engine auto|psync|io_uring`), else its value's name
/// (`--db <PATH>`); clap_mangen's own names the options alone.
fn synopsis(c: &clap::Command, typed: &str) -> String {
    let mut parts = vec![typed.to_string()];
    // Options first, then the operands (TARGET, FILE...), as man pages
    // write them.
    let (operands, options): (Vec<&clap::Arg>, Vec<&clap::Arg>) = c
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .partition(|a| a.is_positional());
    for a in options.into_iter().chain(operands) {
        let name = match (a.get_short(), a.get_long()) {
            _ if a.is_positional() => String::new(),
            (Some(s), Some(l)) => format!("-{s}|--{l}"),
            (None, Some(l)) => format!("--{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, None) => continue,
        };
        let values: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        let value = if !a.get_action().takes_values() {
            String::new()
        } else if !values.is_empty() {
            values.join("|")
        } else {
            let names = a.get_value_names().map_or_else(
                || vec![a.get_id().as_str().to_uppercase()],
                |n| n.iter().map(ToString::to_string).collect(),
            );
            match a.is_positional() {
                true => names.join(" "),
                false => format!("<{}>", names.join(" ")),
            }
        };
        let many = if a.get_num_args().is_some_and(|n| n.max_values() > 1) {
            "..."
        } else {
            ""
        };
        let word = [name, value]
            .into_iter()
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
            + many;
        parts.push(if a.is_required_set() { word } else { format!("[{word}]") });
    }
    if c.has_subcommands() {
        parts.push("<COMMAND>".into());
    }
    parts.join(" ")
}

/// A help text up to its first "; " or ". " outside parentheses and
/// backquotes (a man page's NAME line), without a closing period.
fn first_clause(text: &str) -> String {
    let (mut depth, mut quoted) = (0i32, false);
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            '`' => quoted = !quoted,
            '.' | ';' if depth == 0 && !quoted && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) => {
                return chars[..i].iter().collect::<String>().trim().to_string();
            }
            _ => {}
        }
    }
    text.trim().trim_end_matches('.').to_string()
}

fn render_man(c: clap::Command) -> CliResult<String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(c)
        .render(&mut out)
        .map_err(|e| crate::error::CliError::failed(format!("cannot render the manual: {e}")))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `flashlab man [COMMAND...] [--dir DIR]`.
pub(super) fn man(command: &[String], dir: Option<&std::path::Path>) -> CliResult<Output> {
    let pages = man_pages();
    let Some(dir) = dir else {
        let want = std::iter::once("flashlab")
            .chain(command.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let Some((_, _, c)) = pages.iter().find(|(_, typed, _)| *typed == want) else {
            let names: Vec<&str> = pages
                .iter()
                .filter_map(|(_, t, _)| t.strip_prefix("flashlab "))
                .collect();
            return Err(
                crate::error::CliError::usage(format!("no manual page for `{}`", command.join(" ")))
                    .hint(format!("pages: {}", names.join(", "))),
            );
        };
        return Ok(Output::Raw(render_man(c.clone())?));
    };
    if !dir.is_dir() {
        return Err(
            crate::error::CliError::usage(format!("{} is not a directory", dir.display()))
                .hint("create it first, as in `sudo mkdir -p /usr/local/share/man/man1`"),
        );
    }
    // Every page checked before the first is written: all or none.
    let files: Vec<(std::path::PathBuf, String)> = pages
        .into_iter()
        .map(|(n, _, c)| Ok((dir.join(format!("{n}.1")), render_man(c)?)))
        .collect::<CliResult<_>>()?;
    // A page in use keeps the hint that says how to free it.
    let cli = |e: crate::safety::output::OutputError| {
        let in_use = matches!(e, crate::safety::output::OutputError::InUse { .. });
        let c = crate::error::CliError::from(e);
        match in_use {
            true => c,
            false => c.hint("give a directory of manual pages, as /usr/local/share/man/man1 (sudo to write there)"),
        }
    };
    for (p, _) in &files {
        crate::safety::output::check(p).map_err(cli)?;
    }
    for (p, text) in &files {
        crate::safety::output::write_output(p, text.as_bytes()).map_err(cli)?;
    }
    crate::errln!(
        "wrote {} manual pages to {}; `man flashlab` lists them",
        files.len(),
        dir.display()
    );
    Ok(Output::Raw(String::new()))
}

#[cfg(test)]
mod tests {
    use super::first_clause;

    #[test]
    fn a_man_name_is_the_first_clause_outside_parentheses_and_quotes() {
        assert_eq!(
            first_clause("How many AUs (the FAT area; writes) are fast. More here."),
            "How many AUs (the FAT area; writes) are fast"
        );
        assert_eq!(
            first_clause("Every parameter of a profile (or `PROFILE,key=value...`), with units."),
            "Every parameter of a profile (or `PROFILE,key=value...`), with units"
        );
        assert_eq!(
            first_clause("Everything at once: a, b; then c."),
            "Everything at once: a, b"
        );
        assert_eq!(first_clause("Reads sim:FILE.toml files"), "Reads sim:FILE.toml files");
    }
}
