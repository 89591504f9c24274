//! Cycles between modules, seen at every level of the tree: under each
//! module, its children are the nodes, and a use anywhere inside one child
//! of anything inside another is an edge between the two. So `a::x::deep`
//! using `a::y` while `a::y` uses `a::x` is a cycle between `x` and `y`,
//! though no two files use each other. The crate root is a level like any
//! other: its children are the top-level modules.

use std::collections::{BTreeMap, BTreeSet};

use super::source::Edge;

type Module = Vec<String>;

/// One level's graph: child name to the names it uses, each with why.
pub type Level = BTreeMap<String, BTreeMap<String, String>>;

/// Every level's graph, keyed by the parent module (`[]`: the root).
pub fn levels(edges: &[Edge]) -> BTreeMap<Module, Level> {
    let mut out: BTreeMap<Module, Level> = BTreeMap::new();
    for e in edges {
        let common = e.from.iter().zip(&e.to).take_while(|(a, b)| a == b).count();
        // A module using its own descendant is no edge between two of
        // its parent's children; a descendant using it was never an edge.
        let (Some(a), Some(b)) = (e.from.get(common), e.to.get(common)) else {
            continue;
        };
        let level = out.entry(e.from[..common].to_vec()).or_default();
        level.entry(b.clone()).or_default();
        let uses = level.entry(a.clone()).or_default();
        uses.entry(b.clone()).or_insert_with(|| e.why.clone());
    }
    out
}

/// The strongly connected parts of `g` with more than one node (Tarjan):
/// each a set of modules every one of which reaches every other, names
/// sorted.
pub fn cycles(g: &Level) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a Level,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        parts: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.g.get(v).into_iter().flat_map(|u| u.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut part = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                part.push(w);
                if w == v {
                    break;
                }
            }
            s.parts.push(part);
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        parts: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    let mut parts: Vec<Vec<String>> = s
        .parts
        .into_iter()
        .filter(|p| p.len() > 1)
        .map(|p| {
            let mut p: Vec<String> = p.into_iter().map(String::from).collect();
            p.sort();
            p
        })
        .collect();
    parts.sort();
    parts
}

/// Every cycle of every level, as lines a reader can act on: the level,
/// the modules that reach each other, and every edge among them with one
/// use that makes it (cutting enough of them breaks the cycle).
pub fn report(edges: &[Edge]) -> Vec<String> {
    let mut out = Vec::new();
    for (parent, level) in levels(edges) {
        for part in cycles(&level) {
            let name = if parent.is_empty() {
                "the crate root".to_string()
            } else {
                parent.join("::")
            };
            out.push(format!("under {name}: {}", part.join(", ")));
            for a in &part {
                for (b, why) in level[a].iter().filter(|(b, _)| part.contains(b)) {
                    out.push(format!("    {a} -> {b}: {why}"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod checks {
    use super::*;

    fn m(s: &str) -> Module {
        s.split("::").filter(|p| !p.is_empty()).map(String::from).collect()
    }

    fn edges(list: &[(&str, &str)]) -> Vec<Edge> {
        list.iter()
            .map(|(a, b)| Edge {
                from: m(a),
                to: m(b),
                why: format!("{a} uses {b}"),
            })
            .collect()
    }

    #[test]
    fn a_made_up_cycle_is_found_at_its_level_and_only_there() {
        let e = edges(&[
            // Under `a`: x -> y -> z -> x through files deep in each.
            ("a::x::deep", "a::y"),
            ("a::y::inner", "a::z::leaf"),
            ("a::z", "a::x::other"),
            // Out of the cycle: no part of it.
            ("a::z", "a::w"),
            // A child using its parent, a parent its child: no edges.
            ("b::c", "b"),
            ("b", "b::c"),
            // Top level: p -> q -> p.
            ("p", "q::r"),
            ("q::s", "p::t"),
        ]);
        let l = levels(&e);
        assert_eq!(cycles(&l[&m("a")]), vec![vec!["x", "y", "z"]]);
        assert_eq!(cycles(&l[&m("")]), vec![vec!["p", "q"]]);
        assert!(!l.contains_key(&m("b")), "{l:?}");
        let r = report(&e);
        assert_eq!(r.iter().filter(|l| l.starts_with("under")).count(), 2, "{r:#?}");
        assert!(
            r.contains(&"    y -> z: a::y::inner uses a::z::leaf".to_string()),
            "{r:#?}"
        );
    }

    #[test]
    fn a_made_up_tree_without_a_cycle_has_none() {
        let e = edges(&[
            ("a::x", "a::y"),
            ("a::y::i", "a::z"),
            ("a::x::j", "a::z::k"),
            ("p", "a::x"),
        ]);
        assert!(report(&e).is_empty());
    }

    #[test]
    fn cycles_through_one_node_are_one_part_and_apart_are_two() {
        let e = edges(&[("x", "y"), ("y", "x"), ("x", "z"), ("z", "x"), ("u", "v"), ("v", "u")]);
        let c = cycles(&levels(&e)[&m("")]);
        assert_eq!(c, vec![vec!["u", "v"], vec!["x", "y", "z"]]);
        let r = report(&e);
        assert_eq!(r.len(), 2 + 6, "{r:#?}");
    }
}
