//! The data flow of DESIGN.md, kept in the imports: every module of
//! `src/` may use only the layers below its own, and no two modules use
//! each other (a module and its own parts, such as a test's folder and its
//! `show.rs`, are one). Read from the source (every `crate::` and
//! `super::` path outside test modules), so a new import that climbs back
//! up fails here, naming the file and the path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom first. A module may use the layers before its own.
const LAYERS: &[&[&str]] = &[
    &["units", "random", "files", "console"],
    &["svg", "registers"],
    &["identify"],
    &["target"],
    &["sim"],
    &["safety"],
    &["emulate"],
    &["args"],
    &["measure"],
    &["import"],
    &["document"],
    &["store"],
    &["error"],
    &["runner"],
    &["command"],
    &["format"],
    &["cli"],
];

fn layer(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

/// `src/measure/bench/classes.rs` is `measure::bench::classes`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without comments and without its test module.
fn code(text: &str) -> String {
    let cut = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..cut]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Module paths a file's code names: `crate::a::b` and `super::c`,
/// `use crate::{a, b::c}` groups included.
fn references(own: &[String], code: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(['c', 's']) {
        let s = &rest[i..];
        let boundary = i == 0 || !rest[..i].ends_with(ident);
        let (base, after) = if boundary && s.starts_with("crate::") {
            (Vec::new(), &s[7..])
        } else if boundary && s.starts_with("super::") {
            let mut base = own.to_vec();
            let mut after = s;
            while let Some(a) = after.strip_prefix("super::") {
                base.pop();
                after = a;
            }
            (base, after)
        } else {
            rest = &s[1..];
            continue;
        };
        let groups: Vec<String> = if let Some(g) = after.strip_prefix('{') {
            let end = g.find('}').unwrap_or(g.len());
            g[..end].split(',').map(|x| x.trim().to_string()).collect()
        } else {
            vec![after.to_string()]
        };
        for g in groups {
            let path: Vec<String> = g
                .split("::")
                .map(|p| p.chars().take_while(|&c| ident(c)).collect::<String>())
                .take_while(|p| !p.is_empty() && p.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
                .collect();
            let mut full = base.clone();
            full.extend(path);
            out.push(full);
        }
        rest = &after[after.len().min(1)..];
    }
    out
}

#[test]
fn imports_go_down_the_layers_and_never_both_ways() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let modules: BTreeSet<Vec<String>> = all.iter().map(|f| module_of(&src, f)).collect();
    // The longest module a path names.
    let resolve = |path: &[String]| -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| modules.contains(p))
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut climbs = Vec::new();
    for f in &all {
        let own = module_of(&src, f);
        let Some(top) = own.first().cloned() else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        // A file that is itself a test module (declared under cfg(test)).
        if own.last().is_some_and(|m| m.ends_with("tests")) {
            continue;
        }
        for r in references(&own, &code(&text)) {
            let Some(to) = resolve(&r) else { continue };
            let (Some(a), Some(b)) = (layer(&top), to.first().and_then(|t| layer(t))) else {
                continue;
            };
            if to.first() != Some(&top) && b >= a {
                climbs.push(format!(
                    "{} uses {} (a layer not below its own)",
                    own.join("::"),
                    to.join("::")
                ));
            }
            if to != own && !own.starts_with(&to) {
                edges.entry(own.clone()).or_default().insert(to);
            }
        }
    }
    assert!(climbs.is_empty(), "imports that climb back up:\n{}", climbs.join("\n"));
    let mut both_ways = Vec::new();
    for (a, tos) in &edges {
        for b in tos {
            if a < b && edges.get(b).is_some_and(|t| t.contains(a)) {
                both_ways.push(format!("{} <-> {}", a.join("::"), b.join("::")));
            }
        }
    }
    assert!(
        both_ways.is_empty(),
        "modules that import each other:\n{}",
        both_ways.join("\n")
    );
    // Every top-level module has its place.
    for m in modules.iter().filter(|m| m.len() == 1) {
        assert!(layer(&m[0]).is_some(), "src/{} has no layer in LAYERS", m[0]);
    }
}

/// The measuring side never learns which card an emulation serves: no file
/// of `src/measure` (its tests aside) names the emulation or its record, and
/// identification's `emulated` is asked only whether it is there. The
/// behavioural half (a record that lies about its card changes no verdict)
/// is in `emulate::real_path`.
#[test]
fn the_measuring_side_never_reads_what_an_emulated_card_is() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src.join("measure"), &mut all);
    let mut seen = Vec::new();
    for f in &all {
        if module_of(&src, f).last().is_some_and(|m| m.ends_with("tests")) {
            continue;
        }
        let code = code(&std::fs::read_to_string(f).unwrap());
        for (n, line) in code.lines().enumerate() {
            let names_emulation = line.contains("emulate") || line.contains("Emulated");
            let reads_it = line.contains(".emulated") && !line.contains(".emulated.is_some()");
            if names_emulation && !line.contains(".emulated.is_some()") || reads_it {
                seen.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        seen.is_empty(),
        "the measuring side reads the emulation:\n{}",
        seen.join("\n")
    );
    // It does look: one place asks whether the target is an emulated card.
    let medium = std::fs::read_to_string(src.join("measure/mod.rs")).unwrap();
    assert_eq!(medium.matches(".emulated.is_some()").count(), 1);
}
