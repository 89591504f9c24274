//! A pending journal is found whatever journal directory or user either run
//! has: through the register of pending journals every run reads
//! (/var/tmp/flashlab/pending). Journals over the same bytes have one order
//! across directories; a damaged journal is named as damaged, stops writing
//! runs on the bytes it may cover, and is set aside only on the user's word.

use std::path::Path;
use std::process::{Command, Output};

use super::{crashed_journal, journals, sha};
use crate::support::{LoopDevice, random_file, require_loop_devices};

/// flashlab with the test's store, and `FLASHLAB_JOURNAL_DIR` set to
/// `jdir` (no `--journal-dir`): the way a user with another default
/// directory runs it.
fn under(jdir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashlab"));
    c.envs(crate::support::test_env());
    c.env("FLASHLAB_JOURNAL_DIR", jdir).args(args);
    c
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The repository's reproduction: run A (journals in dA) is killed after
/// its first write; run C, whose default directory is dC, must be refused,
/// naming dA in its hint. With dA out of reach (a drive not mounted), C
/// may run; killed too, its journal comes after A's in the one order, so
/// restoring A's first is refused and restoring by target puts the
/// original back.
#[test]
fn runs_under_different_journal_directories_see_each_others_journals() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "a.img", 64 << 20, 341);
    let original = sha(&f);
    let l = LoopDevice::attach(&f, None);
    let (da, dc) = (dir.path().join("dA"), dir.path().join("dC"));
    let a = under(
        &da,
        &["debug", "write-pattern", l.as_str(), "--range", "4M+2M", "--write"],
    )
    .env("FLASHLAB_CRASH_AT", "device write#2")
    .output()
    .unwrap();
    assert_eq!(a.status.code(), None, "killed: {}", text(&a));
    let crashed = sha(&f);
    assert_ne!(crashed, original);
    let bench = [
        "bench",
        "--write",
        "--rw",
        "write",
        "--bs",
        "1M",
        "--size",
        "4M",
        "--area",
        "4M+4M",
        "--no-store",
    ];
    for name in [l.as_str(), f.to_str().unwrap()] {
        let c = under(&dc, &[&bench[..1], &[name], &bench[1..]].concat())
            .output()
            .unwrap();
        let err = text(&c);
        assert_eq!(c.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains("pending journal"), "{name}: {err}");
        // The hint names the directory that holds the journal.
        let want = format!("flashlab restore {name} --journal-dir {}", da.display());
        assert!(err.contains(&want), "{name}: wants `{want}`: {err}");
        assert_eq!(sha(&f), crashed, "{name}: nothing written");
        assert!(journals(&dc).is_empty(), "{name}: no journal made");
    }
    // dA out of reach: C runs, and is killed after its first write.
    let away = dir.path().join("dA.away");
    std::fs::rename(&da, &away).unwrap();
    let c = under(&dc, &[&bench[..1], &[l.as_str()], &bench[1..]].concat())
        .env("FLASHLAB_CRASH_AT", "device write#1")
        .output()
        .unwrap();
    assert_eq!(c.status.code(), None, "killed: {}", text(&c));
    std::fs::rename(&away, &da).unwrap();
    let (ja, jc) = (journals(&da).remove(0), journals(&dc).remove(0));
    let seq = |j: &Path| flashlab::safety::journal::Journal::header_of(j).unwrap().sequence;
    assert!(seq(&jc) > seq(&ja), "one order: {} then {}", seq(&ja), seq(&jc));
    // The older journal alone would be overwritten by the newer's pattern.
    let older = under(&da, &["restore", ja.to_str().unwrap()]).output().unwrap();
    assert_eq!(older.status.code(), Some(2), "{}", text(&older));
    assert!(text(&older).contains("newer"), "{}", text(&older));
    let by_target = under(&da, &["restore", l.as_str()]).output().unwrap();
    assert!(by_target.status.success(), "{}", text(&by_target));
    drop(l);
    assert_eq!(sha(&f), original, "zero bytes lost");
    assert!(journals(&da).is_empty() && journals(&dc).is_empty());
}

/// `setpriv` to nobody, with a home of its own (so its default journal
/// directory is there) and no FLASHLAB_JOURNAL_DIR.
fn as_nobody(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_flashlab"))
        .args(args)
        .env_remove("FLASHLAB_JOURNAL_DIR")
        .env_remove("XDG_STATE_HOME")
        .env("HOME", home)
        .env("FLASHLAB_DB", home.join("db.sqlite"));
    c
}

/// Root and another user on the same file: each one's pending journal stops
/// the other's writing run. Root restores nobody's journal over nobody's
/// own file; nobody cannot read root's journal (mode 0600), is told whose
/// it is, and root restores it.
#[test]
fn a_pending_journal_of_another_user_stops_a_writing_run() {
    require_loop_devices!();
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let f = random_file(dir.path(), "u.img", 16 << 20, 342);
    for p in [&home, &f] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let original = sha(&f);
    let fs = f.to_str().unwrap();
    let write = ["debug", "write-pattern", fs, "--write", "--range", "1M+2M"];
    let out = as_nobody(&home, &write).env("FLASHLAB_CRASH_AT", "5").output().unwrap();
    assert_eq!(out.status.code(), None, "killed: {}", text(&out));
    let theirs = journals(&home.join(".local/state/flashlab/journals"));
    assert_eq!(theirs.len(), 1, "nobody's journal in nobody's state directory");
    let crashed = sha(&f);
    // Root, with its own journal directory, is refused.
    let jroot = dir.path().join("jroot");
    let out = under(&jroot, &write).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(theirs[0].to_str().unwrap()), "{}", text(&out));
    assert_eq!(sha(&f), crashed, "nothing written");
    // Root restores it (nobody's journal, nobody's file).
    let out = under(&jroot, &["restore", fs]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sha(&f), original);
    // Now root's run is killed; nobody is refused, told whose journal it is.
    let out = under(&jroot, &write).env("FLASHLAB_CRASH_AT", "5").output().unwrap();
    assert_eq!(out.status.code(), None, "killed: {}", text(&out));
    let crashed = sha(&f);
    let out = as_nobody(&home, &write).output().unwrap();
    let err = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot be read here") && err.contains("uid 0"), "{err}");
    assert_eq!(sha(&f), crashed, "nothing written");
    let out = under(&jroot, &["restore", fs]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sha(&f), original, "zero bytes lost");
}

/// A journal nobody made by hand, pointed at through the register, is not
/// written over root's file: root restores another user's journal only
/// over that user's own bytes.
#[test]
fn root_does_not_restore_another_users_journal_over_a_file_not_theirs() {
    require_loop_devices!();
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    let f = random_file(dir.path(), "r.img", 16 << 20, 343);
    let fs = f.to_str().unwrap();
    // Root's run is killed; its journal is copied to nobody's directory as
    // nobody's own (a forgery), and root's is restored.
    let jroot = dir.path().join("jroot");
    let write = ["debug", "write-pattern", fs, "--write", "--range", "1M+2M"];
    let out = under(&jroot, &write).env("FLASHLAB_CRASH_AT", "5").output().unwrap();
    assert_eq!(out.status.code(), None, "killed: {}", text(&out));
    let real = journals(&jroot).remove(0);
    let forged = home.join("forged.fljournal");
    std::fs::copy(&real, &forged).unwrap();
    std::os::unix::fs::chown(&forged, Some(65534), Some(65534)).unwrap();
    let out = under(&jroot, &["restore", fs]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let before = sha(&f);
    let out = under(&jroot, &["restore", forged.to_str().unwrap()]).output().unwrap();
    let err = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("belongs to uid 65534"), "{err}");
    assert_eq!(sha(&f), before, "nothing written");
}

/// One byte flipped in a pending journal's header: listed as damaged (exit
/// 1), every writing run on its bytes refused (with --no-preserve too),
/// one on other bytes not; set aside on the user's word, then runs go on.
#[test]
fn a_damaged_journal_is_named_and_stops_writing_runs_until_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "d.img", 16 << 20, 344);
    let g = random_file(dir.path(), "other.img", 16 << 20, 345);
    let jdir = dir.path().join("j");
    let _forget = super::ForgetJournals(jdir.clone());
    let j = crashed_journal(f.to_str().unwrap(), &jdir, 10);
    let mut bytes = std::fs::read(&j).unwrap();
    bytes[40] ^= 0x08;
    std::fs::write(&j, &bytes).unwrap();
    let crashed = sha(&f);
    let listed = under(&jdir, &["restore", "--json"]).output().unwrap();
    assert_eq!(listed.status.code(), Some(1), "{}", text(&listed));
    let v: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let row = v["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["journal"] == j.to_str().unwrap())
        .expect("listed");
    assert_eq!(row["damaged"], true);
    // The register's copy of the header still names the target.
    assert_eq!(row["target"], f.to_str().unwrap());
    let text_list = under(&jdir, &["restore"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text_list.stdout).contains("DAMAGED"));
    // The one damaged journal is named in both set-aside commands, the
    // listing's (stdout) and the refusal's hint (stderr). The register is
    // the machine's: a test running beside this one may have a damaged
    // journal listed too, and then the command says JOURNAL.
    let aside = format!("`flashlab restore --set-aside {}`", j.display());
    let raw = String::from_utf8_lossy(&text_list.stdout);
    let listing = raw.replace('\n', " ");
    let refusal = String::from_utf8_lossy(&text_list.stderr).replace('\n', " ");
    // The listing's command is for every journal it lists with an error,
    // the refusal's for the damaged ones.
    let listed_alone = raw.lines().filter(|l| l.starts_with("journal ")).count() == 1;
    let damaged_alone = refusal.contains("1 pending journal is damaged");
    for (said, alone) in [(&listing, listed_alone), (&refusal, damaged_alone)] {
        if alone {
            assert!(said.contains(&aside), "{said}");
        } else {
            assert!(said.contains("`flashlab restore --set-aside JOURNAL`"), "{said}");
        }
    }
    for extra in [&[][..], &["--no-preserve"][..]] {
        let out = super::write_pattern(f.to_str().unwrap(), &jdir, extra)
            .output()
            .unwrap();
        let err = text(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        // The listing command names the journal's directory, not the
        // default one a restore looks in by itself.
        assert!(
            err.contains("--set-aside")
                && err.contains(&format!("`flashlab restore --journal-dir {}` lists it", jdir.display())),
            "{err}"
        );
        assert!(
            !err.contains("nothing was restored"),
            "a writing run restores nothing: {err}"
        );
        // Damage is said as damage, not as a journal out of reach.
        assert!(
            err.contains(&format!("a pending journal of {} is damaged: ", f.display())),
            "{err}"
        );
        assert_eq!(sha(&f), crashed, "nothing written");
    }
    // Restoring the target says what is wrong, and the consequence once.
    let out = under(&jdir, &["restore", f.to_str().unwrap()]).output().unwrap();
    let err = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is corrupted at"), "{err}");
    assert_eq!(err.matches("nothing was restored").count(), 1, "{err}");
    assert_eq!(sha(&f), crashed, "nothing written");
    // Other bytes: the register proves the journal is not theirs.
    let out = super::write_pattern(g.to_str().unwrap(), &jdir, &[]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // A damaged copy in a directory no run registered or lists by itself
    // is set aside by its path alone, as a refusal's hint names it.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let copy = elsewhere.join("copy.fljournal");
    std::fs::copy(&j, &copy).unwrap();
    let out = under(&jdir, &["restore", "--set-aside", copy.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !copy.exists() && copy.with_extension("set-aside").is_file(),
        "kept, renamed"
    );
    let out = under(&jdir, &["restore", "--set-aside", j.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("NOT put back"), "{}", text(&out));
    assert!(!j.exists() && j.with_extension("set-aside").is_file(), "kept, renamed");
    let out = super::write_pattern(f.to_str().unwrap(), &jdir, &[]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sha(&f), crashed, "the run put back what it wrote");
}

/// A journal whose directory is gone for good (a temporary directory
/// deleted, a drive never coming back) is listed once by its path, and
/// `restore --set-aside` drops its registry entry, the one thing left to
/// drop. Should the directory come back after all, the journal is found
/// there again and puts the bytes back.
#[test]
fn a_journal_out_of_reach_for_good_can_be_set_aside_and_found_again() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "g.img", 16 << 20, 343);
    let original = sha(&f);
    let fs = f.to_str().unwrap();
    let dx = dir.path().join("dX");
    let write = ["debug", "write-pattern", fs, "--write", "--range", "1M+2M"];
    let out = under(&dx, &write).env("FLASHLAB_CRASH_AT", "5").output().unwrap();
    assert_eq!(out.status.code(), None, "killed: {}", text(&out));
    let journal = journals(&dx).remove(0);
    // Its directory is moved away below: the entry goes by its path.
    let _forget = super::ForgetJournal(journal.clone());
    let js = journal.to_str().unwrap();
    let away = dir.path().join("dX.away");
    std::fs::rename(&dx, &away).unwrap();
    let elsewhere = dir.path().join("dY");
    let list = under(&elsewhere, &["restore"]).output().unwrap();
    let listed = String::from_utf8_lossy(&list.stdout).into_owned();
    let mine: Vec<&str> = listed
        .lines()
        .filter(|l| l.contains("g.img") || l.contains(js))
        .collect();
    assert!(!mine.is_empty(), "{listed}");
    assert!(!listed.contains("journal journal"), "{listed}");
    // The register is the machine's: alone in the listing, the journal is
    // named in the set-aside command; beside another test's, JOURNAL.
    let alone = listed.lines().filter(|l| l.starts_with("journal ")).count() == 1;
    let named = format!("--set-aside {js}");
    let want = if alone { named.as_str() } else { "--set-aside JOURNAL" };
    assert!(listed.replace('\n', " ").contains(want), "{listed}");
    let aside = under(&elsewhere, &["restore", "--set-aside", js]).output().unwrap();
    assert!(aside.status.success(), "{}", text(&aside));
    assert!(text(&aside).contains("dropped the registry entry"), "{}", text(&aside));
    let again = under(&elsewhere, &["restore", "--set-aside", js]).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("hint:"), "{}", text(&again));
    // Back after all: found in its directory, and restored.
    std::fs::rename(&away, &dx).unwrap();
    let back = under(&dx, &["restore", js]).output().unwrap();
    assert!(back.status.success(), "{}", text(&back));
    assert_eq!(sha(&f), original, "zero bytes lost");
    assert!(journals(&dx).is_empty());
}
