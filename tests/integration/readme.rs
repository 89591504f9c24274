//! The README documents every command `flashlab --help` lists: each under
//! a heading of its own or beside its kin (`align | au | ... | blocksize`),
//! and the two that print files for the shell (completions, man) in the
//! paragraph on flags.

use crate::support::flashlab;

/// The commands `flashlab --help` lists, clap's `help` aside.
fn commands() -> Vec<String> {
    let out = flashlab().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("  ").filter(|l| !l.starts_with(' ')))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn the_readme_documents_every_command() {
    let readme = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let headed: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("### `flashlab "))
        .flat_map(|l| l.split(|c: char| !(c.is_ascii_lowercase() || c == '-')))
        .collect();
    let all = commands();
    assert_eq!(all.len(), 23, "{all:?}");
    let missing: Vec<&String> = all
        .iter()
        .filter(|c| {
            !headed.contains(&c.as_str())
                && !readme.contains(&format!("`flashlab {c} "))
                && !readme.contains(&format!("`flashlab {c}`"))
        })
        .collect();
    assert!(missing.is_empty(), "not in the README: {missing:?}");
    assert!(headed.contains(&"blocksize"));
}
