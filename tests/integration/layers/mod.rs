//! The data flow of DESIGN.md, kept in the imports: every module of
//! `src/` may use only the layers below its own, and no modules use each
//! other, directly or round a longer cycle, at any level of the tree. At
//! each level a folder is one module: `measure::align::show` using
//! `measure::au` is `align` using `au` under `measure`, so two folders whose
//! files use each other fail though no two files do. A module and its own
//! parts are one (a child may use its parent's file). Read from the source
//! by [`source`], which resolves each path as the compiler does (through
//! `use` and re-exports, relative paths, macro expansions, test modules
//! included), so a new use that climbs back up or closes a cycle fails
//! here, naming the file, the line and the path. The finder is itself
//! checked on made-up crates and edge lists ([`cycles`] and
//! [`the_reader_sees_what_the_compiler_resolves`]), and on this one must see
//! the edges only macros and re-exports make, so it cannot pass by seeing
//! nothing.

mod cycles;
mod source;

use std::path::{Path, PathBuf};

use source::Crate;

/// Bottom first. A module may use the layers before its own.
const LAYERS: &[&[&str]] = &[
    &["units", "random", "files", "console"],
    &["svg", "registers"],
    &["identify"],
    &["targets"],
    &["sim"],
    &["safety"],
    &["emulate"],
    &["args", "places"],
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

/// Every file of `src/` but `main.rs` (the binary, a crate of its own
/// that only calls `cli`): its module, its path, its text.
fn sources() -> Vec<(Vec<String>, String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    all.retain(|f| f != &src.join("main.rs"));
    all.sort();
    all.iter()
        .map(|f| {
            let place = f.strip_prefix(root).unwrap().display().to_string();
            (module_of(&src, f), place, std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

fn m(s: &str) -> Vec<String> {
    s.split("::").filter(|p| !p.is_empty()).map(String::from).collect()
}

#[test]
fn imports_go_down_the_layers() {
    let lib = Crate::read(&sources());
    let mut climbs = Vec::new();
    for e in lib.edges() {
        let (Some(from), Some(to)) = (e.from.first(), e.to.first()) else {
            continue;
        };
        let (Some(a), Some(b)) = (layer(from), layer(to)) else {
            continue;
        };
        if from != to && b >= a {
            climbs.push(format!(
                "{} uses {} (a layer not below its own): {}",
                e.from.join("::"),
                e.to.join("::"),
                e.why
            ));
        }
    }
    assert!(climbs.is_empty(), "imports that climb back up:\n{}", climbs.join("\n"));
    // Every top-level module has its place.
    for m in lib.modules().iter().filter(|m| m.len() == 1) {
        assert!(layer(&m[0]).is_some(), "src/{} has no layer in LAYERS", m[0]);
    }
}

#[test]
fn no_cycle_at_any_level_of_the_tree() {
    let sources = sources();
    let lib = Crate::read(&sources);
    let edges = lib.edges();
    // The finder sees what a plain text match missed, so a pass here is not
    // a finder that saw nothing: the table of tests reaches each test's
    // folder only through the registry's macro, and svg's `value_label` is
    // its `label`'s, re-exported.
    let registered: Vec<&String> = sources
        .iter()
        .filter(|(_, _, text)| text.contains("impl Registered for Presenter"))
        .map(|(module, _, _)| &module[1])
        .collect();
    assert!(registered.len() >= 9, "{registered:?}");
    for test in registered {
        assert!(
            edges
                .iter()
                .any(|e| e.to.starts_with(&m(&format!("measure::{test}"))) && e.why.contains("registry! expands to")),
            "the table's edge to {test}, made by the registry's macro, is not seen"
        );
    }
    assert_eq!(
        lib.resolve(&m("format"), &m("crate::svg::value_label")),
        Some(m("svg::label")),
        "a re-export is not followed"
    );
    assert!(edges.len() > 500, "only {} edges seen", edges.len());
    let found = cycles::report(&edges);
    assert!(
        found.is_empty(),
        "modules that use each other, a folder counting as one module:\n{}",
        found.join("\n")
    );
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

/// The reader on a made-up crate, each edge a plain text match misses:
/// a folder-level cycle made by files deep inside each folder, a path
/// reached through a parent's `pub use` and one through a sibling's, a
/// relative path, paths inside macro invocations that the macro completes
/// (`super::$m::Item`, `$m::Item`), an exported macro's `$crate::` path (an
/// edge of every module that invokes it), and a test module's use, which
/// makes a cycle like any other. What comments and strings name is no
/// edge.
#[test]
fn the_reader_sees_what_the_compiler_resolves() {
    let file = |module: &str, text: &str| (m(module), format!("{module}.rs"), text.to_string());
    let lib = Crate::read(&[
        file("", "pub mod a; pub mod low; pub mod top;"),
        file(
            "a",
            "pub mod x; pub mod y; pub mod table; pub mod rel; pub mod p; pub mod q; pub mod r;\n\
             pub use y::Shared;\n\
             macro_rules! here { ($m:ident) => { $m::Item }; }\n\
             fn h() { here!(r); }",
        ),
        file("a::x", "pub mod deep; pub struct X;"),
        // x's part uses y's item through the parent's re-export.
        file("a::x::deep", "fn f() -> super::super::Shared { todo!() }"),
        // y uses x: with the above, a cycle between the folders x and y.
        file("a::y", "pub struct Shared; fn g(_: crate::a::x::X) {}"),
        file(
            "a::table",
            "macro_rules! table { ($($m:ident),*) => { $( super::$m::Item; )* }; }\n\
             table!(p, q);",
        ),
        file("a::p", "pub struct Item;"),
        file("a::q", "pub struct Item; pub use super::p::Item as PItem;"),
        file("a::r", "pub struct Item;"),
        // Through q's re-export: an edge to q and one to p.
        file(
            "a::rel",
            "mod inner; fn h() { inner::f(); }\nfn k(_: crate::a::q::PItem) {}",
        ),
        file("a::rel::inner", "pub fn f() {}"),
        file(
            "low",
            "#[macro_export] macro_rules! say { () => { $crate::low::out::put() }; }\n\
             pub mod out;",
        ),
        // A test of low's that uses top, which uses low: a cycle.
        file(
            "low::out",
            "pub fn put() {}\n#[cfg(test)]\nmod tests { fn t() { crate::top::t(); } }",
        ),
        file(
            "top",
            "pub fn t() { crate::say!(); } // crate::a::p is only a comment\n\
             const S: &str = \"crate::a::q in a string\";",
        ),
    ]);
    let edges: Vec<(String, String)> = lib
        .edges()
        .into_iter()
        .map(|e| (e.from.join("::"), e.to.join("::")))
        .collect();
    for want in [
        ("a::x::deep", "a::y"),
        ("a::y", "a::x"),
        ("a::table", "a::p"),
        ("a::table", "a::q"),
        ("a", "a::r"),
        ("a::rel", "a::rel::inner"),
        ("a::rel", "a::q"),
        ("a::rel", "a::p"),
        ("top", "low::out"),
        ("low::out::tests", "top"),
    ] {
        assert!(
            edges.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} not in {edges:#?}"
        );
    }
    assert_eq!(edges.iter().filter(|(from, _)| from == "top").count(), 1, "{edges:#?}");
    let found = cycles::report(&lib.edges());
    let cycles: Vec<&String> = found.iter().filter(|l| l.starts_with("under")).collect();
    assert_eq!(
        cycles,
        ["under the crate root: low, top", "under a: x, y"],
        "{found:#?}"
    );
}
