//! Every refusal says what to do: exit 2 (nothing written) with an `error:`
//! and a `hint:` that fits the command; a device I/O error exits 1. Bad
//! arguments are refused before any device is touched.

use crate::support::flashlab;

fn refused(args: &[&str], code: i32, hint: &str) {
    let out = flashlab().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(err.contains("error:"), "{args:?}: {err}");
    let h = err
        .lines()
        .find_map(|l| l.strip_prefix("hint: "))
        .unwrap_or_else(|| panic!("{args:?}: no hint: {err}"));
    assert!(h.contains(hint), "{args:?}: hint '{h}' should mention '{hint}'");
    assert!(out.stdout.is_empty(), "{args:?}: a refusal prints no result");
}

#[test]
fn each_refusal_has_a_hint_that_fits_the_command() {
    let missing = "/nonexistent/flashlab-test";
    for (args, code, hint) in [
        (&["open-au", "--max", "0"][..], 2, "--help"),
        (&["open-au", "--max", "1152921504606846976"][..], 2, "--help"),
        (&["fat", "--max", "4398046511104"][..], 2, "--help"),
        (&["open-au", "--chunk", "4q"][..], 2, "--help"),
        (&["scatter", "--offset", "40G"][..], 2, "--offset and --length"),
        (&["scatter", "--length", "0"][..], 2, "--length"),
        (&["scatter", "--block", "1000"][..], 2, "--block"),
        (&["align", missing][..], 2, "check the path"),
        (&["fat", "--erase-size", "3G"][..], 2, "--erase-size"),
        (&["open-au", "--chunk", "3k"][..], 2, "--chunk"),
        (
            &["open-au", "sim:demo,capacity=36M,open_aus_random=4,open_aus_linear=4"][..],
            2,
            "larger target",
        ),
        (
            &["open-au", "sim:demo,capacity=1G", "--max", "200"][..],
            2,
            "largest --max that fits",
        ),
        (&["page", "--erase-size", "3K"][..], 2, "--erase-size"),
        (&["page", "--erase-size", "1152921504606846976"][..], 2, "--erase-size"),
        (&["au", "--open-aus", "33"][..], 2, "--help"),
        (
            &[
                "au",
                "sim:demo,capacity=8M,au_size=1M,open_aus_linear=2,open_aus_random=2,fat_area_aus=0",
            ][..],
            2,
            "too small",
        ),
        (&["fat", "--open-aus", "0"][..], 2, "--help"),
        (&["decode", "cid", "zz"][..], 2, "sysfs"),
        (&["sim", "show", "nosuch"][..], 2, "sim list"),
        (&["info", "sim:demo,au_size=20k"][..], 2, "sim show"),
        (
            &["restore", "/nonexistent/x.fljournal"][..],
            2,
            "lists pending journals",
        ),
        (
            &["restore", missing, "--journal-dir", "/nonexistent"][..],
            2,
            "lists pending journals",
        ),
        (&["sim", "reproduce", "bogus"][..], 2, "--help"),
        // A read error is the device's failure, not the user's: exit 1.
        (&["scatter", "sim:demo,bad_ranges=1M+4k"][..], 1, "dmesg"),
        (&["align", "sim:demo,bad_ranges=0+16G"][..], 1, "dmesg"),
    ] {
        refused(args, code, hint);
    }
}

/// A run refused once its target is open (the options do not fit it, the
/// card keeps no data) writes nothing: not even an empty results store.
#[test]
fn a_refused_run_leaves_no_results_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store").join("results.sqlite");
    for args in [
        &["capacity", "sim:demo,keep_data=false", "--write"][..],
        &["bench", "sim:demo", "--bs", "3"][..],
        &["scatter", "sim:demo", "--offset", "40G"][..],
    ] {
        let out = flashlab().args(args).env("FLASHLAB_DB", &db).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!db.exists() && !db.parent().unwrap().exists(), "{args:?} made a store");
    }
    // A run that measures saves itself there.
    let out = flashlab()
        .args(["scatter", "sim:demo"])
        .env("FLASHLAB_DB", &db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(db.is_file());
}

/// Reading commands leave an empty file as they found it: SQLite would
/// have made it a database. A capacity check skipping to the end of u64,
/// and an outlier a trillion times slower, are refused, not panics.
#[test]
fn reading_an_empty_store_writes_nothing_and_overflows_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    crate::support::refused(
        flashlab().args(["results", "list", "--db"]).arg(&empty),
        "the file is empty",
    );
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "the file is left empty");
    for (args, says) in [
        (
            &["capacity", "sim:demo", "--skip", "18446744073709551615"][..],
            "--skip smaller",
        ),
        (
            &["probe", "sim:demo,outlier_factor=1000000000000,outlier_fraction=1"][..],
            "outlier_factor",
        ),
    ] {
        crate::support::refused(flashlab().args(args).arg("--no-store"), says);
    }
}

/// A typo in an argument is refused by the parser, before the target is
/// even opened: a path that does not exist is not what gets reported.
#[test]
fn bad_arguments_are_refused_before_the_target_is_opened() {
    let out = flashlab()
        .args(["open-au", "/nonexistent/flashlab-test", "--chunk", "4q"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("--chunk") && !err.contains("no such file"), "{err}");
}

/// An argument that is not UTF-8 is refused like any other (it panicked
/// where clap's error was rewritten), and so is a journal directory that
/// is not (its path goes into JSON: a writing run panicked mid-run, the
/// directory already made).
#[test]
fn arguments_that_are_not_utf8_are_refused_and_nothing_is_made() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"/tmp/flashlab-\xff-test");
    for args in [
        vec!["info".as_ref(), bad],
        vec!["restore".as_ref(), bad, "--bogus".as_ref()],
    ] {
        let out = flashlab().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("error:") && err.contains("hint:"), "{args:?}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = crate::support::random_file(dir.path(), "t.img", 4 << 20, 1);
    let mut journals = dir.path().as_os_str().as_bytes().to_vec();
    journals.extend_from_slice(b"/j\xff");
    let journals = std::ffi::OsStr::from_bytes(&journals);
    let out = flashlab()
        .arg("bench")
        .arg(&file)
        .args(["--write", "--no-store", "--journal-dir"])
        .arg(journals)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error:") && err.contains("hint:"), "{err}");
    assert!(!std::path::Path::new(journals).exists(), "{err}");
}

/// A manual page and a shell script are not JSON: with --json, man and
/// completions refuse with one JSON error document (roff came out).
#[test]
fn man_and_completions_refuse_json() {
    for args in [&["--json", "man"][..], &["--json", "completions", "bash"][..]] {
        let out = crate::support::flashlab().args(args).output().unwrap();
        let v = crate::support::document(&out, 2, &format!("{args:?}"));
        assert_eq!(v["error"]["kind"], "usage", "{v}");
        assert!(v["error"]["hint"].as_str().unwrap().contains("drop --json"), "{v}");
    }
}

/// `flashlab man --dir DIR` writes a page for every command the pages
/// cite (flashlab(1) names flashlab-probe(1) and the rest), and `man
/// COMMAND` prints one; a page path that is not a regular file is refused
/// before any page is written.
#[test]
fn every_manual_page_cited_exists() {
    let dir = tempfile::tempdir().unwrap();
    let out = flashlab().args(["man", "--dir"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let top = std::fs::read_to_string(dir.path().join("flashlab.1")).unwrap();
    let mut cited = 0;
    for page in std::fs::read_dir(dir.path()).unwrap() {
        let text = std::fs::read_to_string(page.unwrap().path()).unwrap();
        for name in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '\\')) {
            // roff escapes the dash: flashlab\-probe(1) reads flashlab\-probe.
            let name = name.replace("\\-", "-");
            if name.starts_with("flashlab-") && text.contains(&format!("{}(1)", name.replace('-', "\\-"))) {
                assert!(
                    dir.path().join(format!("{name}.1")).is_file(),
                    "{name}(1) is cited but not written"
                );
                cited += 1;
            }
        }
    }
    assert!(cited >= 10, "{cited} citations");
    assert!(
        top.contains(".SH DESCRIPTION") && top.contains("journalled first"),
        "{top}"
    );
    let probe = flashlab().args(["man", "probe"]).output().unwrap();
    let probe = String::from_utf8_lossy(&probe.stdout);
    assert!(probe.contains(".TH flashlab-probe 1"), "{probe}");
    let nested = flashlab().args(["man", "results", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&nested.stdout).contains("flashlab\\-results\\-list"));
    let none = flashlab().args(["man", "nothing"]).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("hint: pages: info, probe"));
    // A page's path taken by a directory: refused, nothing written.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join("flashlab-probe.1")).unwrap();
    let out = flashlab().args(["man", "--dir"]).arg(other.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!other.path().join("flashlab.1").exists(), "nothing written");
}

/// clap's refusal of a value names the help of the command typed, never
/// the value itself taken for a command (`flashlab bench fast --help`).
#[test]
fn a_refused_value_names_the_help_of_the_command_typed() {
    for (args, hint) in [
        (
            &["bench", "--preset", "fast"][..],
            "`flashlab bench --help` describes --preset",
        ),
        (
            &["--format", "text", "probe", "--engine", "foo"][..],
            "`flashlab probe --help` describes --engine",
        ),
        (
            &["results", "show", "x"][..],
            "`flashlab results show --help` describes <ID>",
        ),
    ] {
        let out = flashlab().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let h = err.lines().find_map(|l| l.strip_prefix("hint: "));
        assert_eq!(h, Some(hint), "{args:?}: {err}");
    }
}

/// A manual page's SYNOPSIS names the global options the command takes
/// and the values an option has (clap_mangen's own gave `[--engine]`).
#[test]
fn a_manual_pages_synopsis_shows_json_and_the_values_of_engine() {
    let out = flashlab().args(["man", "probe"]).output().unwrap();
    let page = String::from_utf8_lossy(&out.stdout);
    let synopsis = page
        .lines()
        .skip_while(|l| *l != ".SH SYNOPSIS")
        .nth(1)
        .unwrap_or_default();
    assert!(
        synopsis.starts_with("\\fBflashlab probe\\fR [\\-\\-engine auto|psync|io_uring] "),
        "{synopsis}"
    );
    assert!(
        synopsis.contains(" [\\-\\-json] [\\-\\-format text|json|csv|toml|html] "),
        "{synopsis}"
    );
    assert!(synopsis.contains(" [\\-\\-db <PATH>] "), "{synopsis}");
    assert!(synopsis.ends_with(" [TARGET]"), "{synopsis}");
}

/// bash's completions offer the built-in cards where a command takes a
/// TARGET (and fall back to file names, `-o default`, for a path).
#[test]
fn bash_completions_offer_the_sim_profiles() {
    let out = flashlab().args(["completions", "bash"]).output().unwrap();
    let script = String::from_utf8_lossy(&out.stdout);
    let probe = script
        .lines()
        .skip_while(|l| l.trim() != "flashlab__subcmd__probe)")
        .find(|l| l.trim_start().starts_with("opts="))
        .unwrap_or_default();
    assert!(probe.contains(" sim:demo sim:kingston-sa04g "), "{probe}");
    assert!(script.contains("complete -F _flashlab_whole_words -o nosort -o bashdefault -o default flashlab"));
    let sim_show = script
        .lines()
        .skip_while(|l| l.trim() != "flashlab__subcmd__sim__subcmd__show)")
        .find(|l| l.trim_start().starts_with("opts="))
        .unwrap_or_default();
    assert!(sim_show.contains(" sim:kingston-sa04g "), "{sim_show}");
}

/// In a real bash, a card completes across the colon bash splits words at
/// (`COMP_WORDBREAKS`): `sim:de<Tab>` gives `demo`, the part bash puts
/// after the colon, and options still complete.
#[test]
fn bash_completes_a_card_across_the_colon() {
    let out = flashlab().args(["completions", "bash"]).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flashlab.bash");
    std::fs::write(&file, &out.stdout).unwrap();
    // A quoted word with a blank in it is one word, as bash has it: its
    // second half once completed as a word of its own (in a file named
    // `card --no-st...`, `--no-st` gave `--no-store`, which bash put over
    // the whole quoted word). Nothing here lets bash's own filename
    // completion (`-o default`) complete it, quotes and all.
    // Each line with COMP_WORDS as bash splits it.
    let cases: [(&str, &str, &[&str]); 6] = [
        ("flashlab probe \"card --no-st", "flashlab probe '\"card --no-st'", &[]),
        (
            "flashlab probe --journal-dir \"a b\" sim:de",
            "flashlab probe --journal-dir '\"a b\"' sim : de",
            &["demo"],
        ),
        ("flashlab probe sim:de", "flashlab probe sim : de", &["demo"]),
        (
            "flashlab probe sim:sandisk-2g",
            "flashlab probe sim : sandisk-2g",
            &["sandisk-2gb"],
        ),
        (
            "flashlab sim show sim:kin",
            "flashlab sim show sim : kin",
            &["kingston-sa04g"],
        ),
        ("flashlab probe --no-st", "flashlab probe --no-st", &["--no-store"]),
    ];
    for (line, words, want) in cases {
        let run = format!(
            "cd {}; source {}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; COMP_WORDS=({words}); \
             COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); \
             _flashlab_whole_words flashlab \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            dir.path().display(),
            file.display()
        );
        let got = std::process::Command::new("bash").args(["-c", &run]).output().unwrap();
        assert!(got.status.success(), "{line}: {}", String::from_utf8_lossy(&got.stderr));
        let text = String::from_utf8_lossy(&got.stdout);
        let answers: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(answers, want, "{line}");
    }
}

/// fish's script offers the cards where a command's argument takes one,
/// nested commands included, and leaves files completing beside them.
#[test]
fn fish_completions_offer_the_cards_to_positional_arguments() {
    let out = flashlab().args(["completions", "fish"]).output().unwrap();
    let script = String::from_utf8_lossy(&out.stdout);
    for when in [
        "__fish_flashlab_using_subcommand probe",
        "__fish_flashlab_using_subcommand emulate",
        "__fish_flashlab_using_subcommand sim; and __fish_seen_subcommand_from show",
    ] {
        let line = script
            .lines()
            .find(|l| l.starts_with(&format!("complete -c flashlab -n \"{when}\" -a ")))
            .unwrap_or_else(|| panic!("no card line for {when}"));
        assert!(line.contains("sim:demo sim:kingston-sa04g "), "{line}");
        assert!(!line.contains(" -f"), "files are no longer offered: {line}");
    }
}

/// In a real zsh (driven through a pseudo-terminal by its zpty module),
/// a card completes wherever a command takes one, options included, and
/// files still complete there: clap's own script offered only the cards,
/// or (without them) only files.
#[test]
fn zsh_completes_cards_and_files_alike() {
    crate::support::require_program!("zsh", "zsh");
    let out = flashlab().args(["completions", "zsh"]).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let functions = dir.path().join("functions");
    std::fs::create_dir(&functions).unwrap();
    std::fs::write(functions.join("_flashlab"), &out.stdout).unwrap();
    std::fs::write(dir.path().join("card-image.img"), b"").unwrap();
    // Each line is typed with a Tab and Enter into an interactive zsh
    // where `flashlab` prints the words it got ("G""OT" so the echoed
    // definition is not taken for an answer).
    let driver = format!(
        r#"zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z 'PS1=""; fpath=({fns} $fpath); autoload -Uz compinit; compinit -u -d {dir}/zcompdump; cd {dir}'
zpty -w z 'flashlab() {{ print -r -- "G""OT:$*:E""ND" }}'
for line in "$@"; do
  zpty -w -n z "$line"$'\t'
  sleep 0.3
  zpty -w -n z $'\r'
  zpty -r -m z out '*GOT:*:END*' && print -r -- "${{${{out##*GOT:}}%%:END*}}"
done
zpty -d z
"#,
        fns = functions.display(),
        dir = dir.path().display(),
    );
    let cases = [
        ("flashlab probe sim:de", "probe sim:demo"),
        ("flashlab sim show sim:kin", "sim show sim:kingston-sa04g"),
        ("flashlab emulate sim:sandisk-2g", "emulate sim:sandisk-2gb"),
        ("flashlab life x.trace --card sim:de", "life x.trace --card sim:demo"),
        ("flashlab probe card-im", "probe card-image.img"),
        ("flashlab probe --no-st", "probe --no-store"),
    ];
    let mut zsh = std::process::Command::new("timeout");
    zsh.args(["60", "zsh", "-f", "-c", &driver, "zsh"]);
    zsh.args(cases.map(|(line, _)| line));
    let got = zsh.output().unwrap();
    assert!(got.status.success(), "{}", String::from_utf8_lossy(&got.stderr));
    let text = String::from_utf8_lossy(&got.stdout);
    let answers: Vec<&str> = text.lines().collect();
    assert_eq!(answers, cases.map(|(_, want)| want), "{text}");
}
