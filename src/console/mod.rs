//! The terminal, at the bottom of every layer: stdout and stderr that never
//! panic ([`stdio`], with the `out!`, `outln!` and `errln!` macros), the one
//! table layout ([`table`]) and word wrapping. Every layer prints through
//! here; nothing here knows what is printed.

pub mod stdio;
pub mod table;

/// `word` as one word of a command line a person copies into a shell:
/// as it is where every character is plain (letters, digits and
/// `_@%+=:,./-`), else in single quotes (a quote inside as `'\''`). A
/// spec such as `sim:demo,bad_ranges=0+4k;8k+4k` or a path with a space
/// would otherwise run as two commands, or as two arguments.
pub fn shell_word(word: &str) -> std::borrow::Cow<'_, str> {
    // A relative path that begins with `-` would read as an option.
    let word: std::borrow::Cow<'_, str> = if word.starts_with('-') {
        format!("./{word}").into()
    } else {
        word.into()
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word
    } else {
        format!("'{}'", word.replace('\'', "'\\''")).into()
    }
}

/// " (did you mean 'x'?)" for the names close to `name`: those that begin
/// with it, else those within two edits of it (no suggestion for
/// "kingston" or "open_aus"). Empty when none is close.
pub fn did_you_mean<'a>(name: &str, names: impl Iterator<Item = &'a str> + Clone) -> String {
    let mut close: Vec<&str> = names
        .clone()
        .filter(|n| name.len() >= 3 && n.starts_with(name))
        .collect();
    if close.is_empty() {
        close = names.filter(|n| edits(name, n) <= 2).collect();
    }
    match close.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean '{one}'?)"),
        many => format!(
            " (did you mean {}?)",
            many.iter()
                .take(4)
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    }
}

/// Levenshtein distance between two short names.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The words of `text`, a `quoted command` kept as one and as it is
/// ("`resu|lts compare`" split across lines could not be copied).
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut open = false;
    // Inside backquotes, every character as it is: a command's quoted
    // path may hold two spaces or a tab, and squeezed it names another
    // file.
    for c in text.chars() {
        if c == '`' {
            open = !open;
        } else if !open && c.is_whitespace() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            continue;
        }
        word.push(c);
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// $COLUMNS, as the CLI read it at start ([`set_columns`]).
static COLUMNS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// The width where neither stdout nor stderr is a terminal: $COLUMNS,
/// which the CLI reads once as it starts (none, or under 20: 80).
pub fn set_columns(columns: Option<usize>) {
    if let Some(c) = columns.filter(|&c| c >= 20) {
        let _ = COLUMNS.set(c);
    }
}

/// Columns of text: the terminal's (stdout's, else stderr's), else
/// $COLUMNS ([`set_columns`]), else 80 (lines wrapped at 79 whatever the
/// terminal, and tables and hints split words on narrower ones).
pub fn width() -> usize {
    use std::io::IsTerminal;
    let tty = |ok: bool, fd: std::os::fd::BorrowedFd<'_>| {
        ok.then(|| rustix::termios::tcgetwinsize(fd).ok())
            .flatten()
            .map(|w| usize::from(w.ws_col))
            .filter(|&c| c >= 20)
    };
    tty(std::io::stdout().is_terminal(), rustix::stdio::stdout())
        .or_else(|| tty(std::io::stderr().is_terminal(), rustix::stdio::stderr()))
        .or_else(|| COLUMNS.get().copied())
        .unwrap_or(80)
}

/// `text` with each line wider than the [`width`] wrapped between words
/// under its own indent and two more columns; other lines as they are. A
/// table's lines are never touched: tables lay themselves out to the
/// width, and rewrapping one would squeeze its padding.
pub fn wrap_long_lines(text: &str) -> String {
    let width = width();
    let long = |l: &str| l.chars().count() > width && !l.contains(['│', '┌', '└', '╞', '├', '─']);
    if !text.lines().any(long) {
        return text.to_string();
    }
    let mut out: Vec<String> = text
        .lines()
        .map(|l| {
            if !long(l) {
                return l.to_string();
            }
            let body = l.trim_start();
            let indent = &l[..l.len() - body.len()];
            wrap(body, indent, &format!("{indent}  "))
        })
        .collect();
    if text.ends_with('\n') {
        out.push(String::new());
    }
    out.join("\n")
}

/// Words wrapped to the [`width`] less one column (79 on an 80-column
/// terminal), the first line after `first`, the rest after `rest`. A word
/// longer than a line stays whole: a path or a command copies in one piece.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    let width = width() - 1;
    let mut out = String::from(first);
    let mut col = first.chars().count();
    let mut fresh = true;
    for word in words(text) {
        let word = word.as_str();
        let w = word.chars().count();
        if !fresh && col + 1 + w > width {
            out.push('\n');
            out.push_str(rest);
            col = rest.chars().count();
            fresh = true;
        }
        if !fresh {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += w;
        fresh = false;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_quoted_command_is_never_split() {
        let text = "saved as run 3 in /tmp/a-rather-long-name/results.sqlite (`flashlab results show 3`, \
                    `flashlab report 3`)";
        let out = super::wrap(text, "", "");
        for line in out.lines() {
            assert_eq!(line.matches('`').count() % 2, 0, "{out}");
        }
        assert!(out.contains("`flashlab report 3`"), "{out}");
    }

    #[test]
    fn a_word_for_the_shell_is_quoted_only_where_it_must_be() {
        use super::shell_word;
        assert_eq!(shell_word("sim:demo,capacity=1G"), "sim:demo,capacity=1G");
        assert_eq!(shell_word("/dev/loop0"), "/dev/loop0");
        assert_eq!(shell_word("demo,lead_program_ns=5;4"), "'demo,lead_program_ns=5;4'");
        assert_eq!(shell_word("/tmp/my card.img"), "'/tmp/my card.img'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("-dash.img"), "./-dash.img");
        assert_eq!(shell_word("-a b"), "'./-a b'");
        // What sh makes of it is the word again.
        for w in ["a b;c", "it's $HOME `x`", "*?[]", "\\n"] {
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf %s {}", shell_word(w))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), w);
        }
    }

    #[test]
    fn a_quoted_command_keeps_its_white_space() {
        let text = "run `flashlab restore '/tmp/a  b\tc.img'` first";
        let out = super::wrap(text, "", "");
        assert!(out.contains("`flashlab restore '/tmp/a  b\tc.img'`"), "{out:?}");
        assert_eq!(super::wrap("a  b\tc", "", ""), "a b c");
    }

    #[test]
    fn close_names_are_suggested() {
        let names = [
            "kingston-sa04g",
            "demo",
            "open_aus_linear",
            "open_aus_random",
            "au_size",
        ];
        let dym = |n: &str| super::did_you_mean(n, names.iter().copied());
        assert_eq!(dym("kingston"), " (did you mean 'kingston-sa04g'?)");
        assert_eq!(
            dym("open_aus"),
            " (did you mean 'open_aus_linear' or 'open_aus_random'?)"
        );
        assert_eq!(dym("au_sise"), " (did you mean 'au_size'?)");
        assert_eq!(dym("nothing_like_it"), "");
    }
}
