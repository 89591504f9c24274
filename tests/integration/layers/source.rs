//! What a crate's source says about which module uses which, read the way
//! the compiler resolves names rather than by matching text: a path is
//! followed module by module and through every `use` it meets (a parent's
//! `pub use` of a child's item is an edge to that child, not to the
//! parent), relative paths (`session::X` in the module that declares
//! `session`) count like `crate::` and `super::` ones, and a macro's
//! expansion is an edge of the module that invokes it: `$crate::` paths in
//! its body, and a `super::$module` the invocation fills in (the
//! registry's table of tests). Comments and strings are left out; test
//! modules are read like the rest, since a test that uses a module above
//! its own makes a cycle all the same (it would not build on its own).

use std::collections::{BTreeMap, BTreeSet};

type Module = Vec<String>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum T {
    Id(String),
    /// `::`
    Sep,
    P(char),
}

#[derive(Debug, Clone)]
struct Tok {
    t: T,
    line: usize,
}

/// The tokens that matter for paths: identifiers, `::` and punctuation;
/// comments, strings, char literals and numbers dropped (a brace in a string
/// or a char literal would otherwise break the nesting).
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    // Skip to just past `end` (a string's quote, say), counting lines.
    let skip = |mut j: usize, line: &mut usize, escapes: bool, end: &dyn Fn(usize) -> bool| {
        while j < c.len() && !end(j) {
            if c[j] == '\n' {
                *line += 1;
            }
            j += if escapes && c[j] == '\\' { 2 } else { 1 };
        }
        j + 1
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        let after_ident = i > 0 && ident(c[i - 1]);
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if !after_ident && (ch == 'r' || ch == 'b' && next == Some('r')) && raw_string(&c, i).is_some() {
            let (open, hashes) = raw_string(&c, i).unwrap();
            let closes = |j: usize| c[j] == '"' && (1..=hashes).all(|h| c.get(j + h) == Some(&'#'));
            i = skip(open + 1, &mut line, false, &closes) + hashes;
        } else if ch == '"' || !after_ident && ch == 'b' && next == Some('"') {
            let open = if ch == 'b' { i + 1 } else { i };
            i = skip(open + 1, &mut line, true, &|j| c[j] == '"');
        } else if ch == '\'' && next == Some('\\') {
            i = skip(i + 2, &mut line, true, &|j| c[j] == '\'');
        } else if ch == '\'' && c.get(i + 2) == Some(&'\'') {
            i += 3;
        } else if ch == '\'' {
            // A lifetime: its name follows as an identifier, which names no
            // module.
            i += 1;
        } else if ch.is_ascii_digit() {
            while i < c.len() && ident(c[i]) {
                i += 1;
            }
        } else if ident(ch) {
            let start = i;
            while i < c.len() && ident(c[i]) {
                i += 1;
            }
            let t = T::Id(c[start..i].iter().collect());
            out.push(Tok { t, line });
        } else if ch == ':' && next == Some(':') {
            out.push(Tok { t: T::Sep, line });
            i += 2;
        } else {
            out.push(Tok { t: T::P(ch), line });
            i += 1;
        }
    }
    out
}

/// `r"`, `r#"`, `br##"`: where its opening quote is and how many `#`.
fn raw_string(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i + if c[i] == 'b' { 2 } else { 1 };
    let start = j;
    while c.get(j) == Some(&'#') {
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some((j, j - start))
}

/// A path as written, and the module it is written in.
#[derive(Debug, Clone)]
struct Written {
    at: Module,
    segs: Vec<String>,
}

/// A `macro_rules!` body, as far as paths go.
#[derive(Debug, Clone, Default)]
struct Macro {
    /// Complete paths (`$crate::console::stdio::out`).
    paths: Vec<Vec<String>>,
    /// `super::$module::Presenter` as (`super`, `Presenter`): the invocation fills
    /// in the middle.
    templates: Vec<(Vec<String>, Vec<String>)>,
    /// Macros its expansion invokes.
    calls: Vec<String>,
}

#[derive(Debug, Clone)]
struct Invocation {
    at: Module,
    name: String,
    /// Every identifier and every path inside its delimiters.
    idents: BTreeSet<String>,
    paths: Vec<Vec<String>>,
    place: String,
}

/// One module's use of another, with where it was seen.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: Module,
    pub to: Module,
    pub why: String,
}

/// Everything read from a crate's files.
#[derive(Debug, Default)]
pub struct Crate {
    modules: BTreeSet<Module>,
    bindings: BTreeMap<Module, BTreeMap<String, Written>>,
    refs: Vec<(Written, String)>,
    macros: BTreeMap<String, Vec<Macro>>,
    invocations: Vec<Invocation>,
}

impl Crate {
    /// `files`: each file's module (`["measure", "align"]` for
    /// `measure/align/mod.rs`), a place to name in messages, and its text.
    pub fn read(files: &[(Module, String, String)]) -> Crate {
        let mut c = Crate::default();
        for (module, place, text) in files {
            c.modules.insert(module.clone());
            File::new(&tokens(text), module.clone(), place.clone(), &mut c).items();
        }
        c
    }

    pub fn modules(&self) -> &BTreeSet<Module> {
        &self.modules
    }

    /// Every use of a module by a module outside it, once per place that
    /// makes it (a module's use of its own ancestors is no edge: it is part
    /// of them).
    pub fn edges(&self) -> Vec<Edge> {
        let mut out = BTreeSet::new();
        let mut add = |from: &Module, to: Vec<Module>, why: String| {
            for to in to.into_iter().filter(|to| !from.starts_with(to)) {
                let why = why.clone();
                out.insert(Edge {
                    from: from.clone(),
                    to,
                    why,
                });
            }
        };
        for (w, place) in &self.refs {
            add(
                &w.at,
                self.reach(&w.at, &w.segs, 0),
                format!("{place}: {}", w.segs.join("::")),
            );
        }
        for inv in &self.invocations {
            let mut seen = BTreeSet::new();
            self.expand(inv, &inv.name, 0, &mut seen, &mut |to, via| {
                let why = format!("{}: {}! expands to {via}", inv.place, inv.name);
                add(&inv.at, to, why);
            });
        }
        out.into_iter().collect()
    }

    /// The edges `inv` makes through macro `name`, whose expansion may
    /// invoke others.
    fn expand(
        &self,
        inv: &Invocation,
        name: &str,
        depth: usize,
        seen: &mut BTreeSet<String>,
        edge: &mut dyn FnMut(Vec<Module>, String),
    ) {
        if depth > 8 || !seen.insert(name.to_string()) {
            return;
        }
        for def in self.macros.get(name).into_iter().flatten() {
            for p in &def.paths {
                edge(self.reach(&inv.at, p, 0), p.join("::"));
            }
            for (pre, post) in &def.templates {
                let Some(base) = (if pre.is_empty() {
                    Some(inv.at.clone())
                } else {
                    self.resolve(&inv.at, pre)
                }) else {
                    continue;
                };
                let filled = inv
                    .idents
                    .iter()
                    .map(|x| vec![x.clone()])
                    .chain(inv.paths.iter().cloned());
                for mid in filled {
                    if !self.modules.contains(&[base.clone(), vec![mid[0].clone()]].concat()) {
                        continue;
                    }
                    let tail: &[String] = if mid.len() == 1 { post } else { &[] };
                    let full = [pre.clone(), mid, tail.to_vec()].concat();
                    edge(self.reach(&inv.at, &full, 0), full.join("::"));
                }
            }
            for call in &def.calls {
                self.expand(inv, call, depth + 1, seen, edge);
            }
        }
    }

    /// The module `segs`, written in `at`, names (the item's own module
    /// when it ends at an item); None for another crate or a local name.
    pub fn resolve(&self, at: &[String], segs: &[String]) -> Option<Module> {
        self.reach(at, segs, 0).pop()
    }

    /// Every module `segs` passes through on its way: each one whose `use`
    /// it follows (a path through a re-export depends on the re-export
    /// staying), then the one it ends in; empty for another crate or a
    /// local name.
    fn reach(&self, at: &[String], segs: &[String], depth: usize) -> Vec<Module> {
        let Some(first) = segs.first() else { return Vec::new() };
        if depth > 16 {
            return Vec::new();
        }
        let (cur, rest) = match first.as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (at.to_vec(), &segs[1..]),
            "super" => {
                let mut cur = at.to_vec();
                let supers = segs.iter().take_while(|s| *s == "super").count();
                for _ in 0..supers {
                    if cur.pop().is_none() {
                        return Vec::new();
                    }
                }
                (cur, &segs[supers..])
            }
            s if self.modules.contains(&[at, &[s.to_string()]].concat()) => (at.to_vec(), segs),
            s => match self.bindings.get(at).and_then(|b| b.get(s)) {
                Some(b) => return self.reach(&b.at, &[&b.segs, &segs[1..]].concat(), depth + 1),
                None => return Vec::new(),
            },
        };
        self.walk(cur, rest, depth)
    }

    /// Down from `cur` a segment at a time, through a `use` where a
    /// segment is one (a re-export leads on to the module that defines it).
    fn walk(&self, mut cur: Module, rest: &[String], depth: usize) -> Vec<Module> {
        for (k, s) in rest.iter().enumerate() {
            let next = [&cur[..], std::slice::from_ref(s)].concat();
            if self.modules.contains(&next) {
                cur = next;
                continue;
            }
            if let Some(b) = self.bindings.get(&cur).and_then(|b| b.get(s)) {
                let through = [&b.segs[..], &rest[k + 1..]].concat();
                let mut out = vec![cur];
                out.extend(self.reach(&b.at, &through, depth + 1));
                return out;
            }
            break;
        }
        vec![cur]
    }
}

/// One file's tokens, read item by item into a [`Crate`].
struct File<'a> {
    t: &'a [Tok],
    i: usize,
    place: String,
    /// The file's module, then any inline `mod x { }` it is inside, with
    /// the brace depth that closes each.
    stack: Vec<(Module, usize)>,
    depth: usize,
    out: &'a mut Crate,
}

impl<'a> File<'a> {
    fn new(t: &'a [Tok], module: Module, place: String, out: &'a mut Crate) -> Self {
        File {
            t,
            i: 0,
            place,
            stack: vec![(module, usize::MAX)],
            depth: 0,
            out,
        }
    }

    fn at(&self, k: usize) -> Option<&T> {
        self.t.get(k).map(|t| &t.t)
    }

    fn id(&self, k: usize) -> Option<&str> {
        match self.at(k) {
            Some(T::Id(s)) => Some(s),
            _ => None,
        }
    }

    /// Whether the token at `k` is no path's start: the middle of one
    /// (after `::`) or a macro variable (after `$`).
    fn continues(&self, k: usize) -> bool {
        matches!(self.at(k.wrapping_sub(1)), Some(T::Sep | T::P('$')))
    }

    fn module(&self) -> Module {
        self.stack.last().unwrap().0.clone()
    }

    fn place(&self, k: usize) -> String {
        format!("{}:{}", self.place, self.t.get(k).map_or(0, |t| t.line))
    }

    /// The index just past the group that opens at `k`.
    fn close(&self, k: usize) -> usize {
        let mut depth = 0i32;
        for j in k..self.t.len() {
            match self.at(j) {
                Some(T::P('(' | '[' | '{')) => depth += 1,
                Some(T::P(')' | ']' | '}')) => {
                    depth -= 1;
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
        }
        self.t.len()
    }

    fn items(mut self) {
        while self.i < self.t.len() {
            let i = self.i;
            match self.at(i).cloned() {
                Some(T::P('{')) => {
                    self.depth += 1;
                    self.i += 1;
                }
                Some(T::P('}')) => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.stack.last().is_some_and(|(_, d)| *d == self.depth) {
                        self.stack.pop();
                    }
                    self.i += 1;
                }
                Some(T::Id(k)) if k == "mod" && self.id(i + 1).is_some() && self.at(i + 2) == Some(&T::P('{')) => {
                    let m = [self.module(), vec![self.id(i + 1).unwrap().to_string()]].concat();
                    self.out.modules.insert(m.clone());
                    self.stack.push((m, self.depth));
                    self.depth += 1;
                    self.i += 3;
                }
                Some(T::Id(k)) if k == "use" => self.use_item(),
                Some(T::Id(k)) if k == "macro_rules" && self.at(i + 1) == Some(&T::P('!')) => self.macro_rules(),
                Some(T::Id(_)) | Some(T::P('$')) if !self.continues(i) => self.path(),
                _ => self.i += 1,
            }
        }
    }

    /// A path starting at `self.i`: a reference, a template prefix in a
    /// macro body (`super::$module`), or a macro's name.
    fn path(&mut self) {
        let (segs, end, template) = self.read_path(self.i);
        let here = self.module();
        if let Some(name) = segs.last()
            && self.at(end) == Some(&T::P('!'))
            && matches!(self.at(end + 1), Some(T::P('(' | '[' | '{')))
        {
            let close = self.close(end + 1);
            let inv = self.invocation(name, end + 1, close);
            self.out.invocations.push(inv);
        }
        if segs.len() >= 2 && !template {
            let w = Written { at: here, segs };
            self.out.refs.push((w, self.place(self.i)));
        }
        self.i = end.max(self.i + 1);
    }

    /// The segments of the path at `k` (`$crate` as `crate`), the index
    /// past it, and whether it stops at a macro variable (`super::$m`).
    fn read_path(&self, mut k: usize) -> (Vec<String>, usize, bool) {
        let mut segs = Vec::new();
        loop {
            if self.at(k) == Some(&T::P('$')) && self.id(k + 1) == Some("crate") {
                segs.push("crate".to_string());
                k += 2;
            } else if let Some(s) = self.id(k) {
                segs.push(s.to_string());
                k += 1;
            } else {
                break;
            }
            if self.at(k) != Some(&T::Sep) {
                break;
            }
            if self.at(k + 1) == Some(&T::P('$')) && self.id(k + 2) != Some("crate") {
                return (segs, k + 1, true);
            }
            k += 1;
        }
        (segs, k, false)
    }

    fn invocation(&self, name: &str, open: usize, close: usize) -> Invocation {
        let mut inv = Invocation {
            at: self.module(),
            name: name.to_string(),
            idents: BTreeSet::new(),
            paths: Vec::new(),
            place: self.place(open),
        };
        let mut k = open;
        while k < close {
            let (segs, end, _) = self.read_path(k);
            if segs.is_empty() {
                k += 1;
                continue;
            }
            inv.idents.extend(segs.iter().cloned());
            if segs.len() >= 2 {
                inv.paths.push(segs);
            }
            k = end;
        }
        inv
    }

    /// `use a::{b, c::{self, D as E}, f::*};`: each leaf is a reference,
    /// and binds its name in this module (what a child's `super::E` or
    /// another module's `a::E` reaches through).
    fn use_item(&mut self) {
        let start = self.i;
        let mut leaves = Vec::new();
        let end = self.use_tree(start + 1, Vec::new(), &mut leaves);
        let here = self.module();
        for (name, segs) in leaves {
            let w = Written { at: here.clone(), segs };
            if let Some(name) = name {
                self.out
                    .bindings
                    .entry(here.clone())
                    .or_default()
                    .insert(name, w.clone());
            }
            self.out.refs.push((w, self.place(start)));
        }
        self.i = end;
    }

    fn use_tree(&self, mut k: usize, mut segs: Vec<String>, out: &mut Vec<(Option<String>, Vec<String>)>) -> usize {
        if self.at(k) == Some(&T::Sep) {
            k += 1;
        }
        loop {
            if self.at(k) == Some(&T::P('$')) && self.id(k + 1) == Some("crate") {
                segs.push("crate".into());
                k += 2;
            } else if let Some(s) = self.id(k) {
                segs.push(s.to_string());
                k += 1;
            } else if self.at(k) == Some(&T::P('*')) {
                out.push((None, segs));
                return k + 1;
            } else if self.at(k) == Some(&T::P('{')) {
                k += 1;
                while k < self.t.len() && self.at(k) != Some(&T::P('}')) {
                    k = self.use_tree(k, segs.clone(), out);
                    if self.at(k) == Some(&T::P(',')) {
                        k += 1;
                    }
                }
                return k + 1;
            } else {
                break;
            }
            if self.at(k) != Some(&T::Sep) {
                break;
            }
            k += 1;
        }
        if segs.last().is_some_and(|s| s == "self") {
            segs.pop();
        }
        let mut name = segs.last().cloned();
        if self.id(k) == Some("as") {
            name = self.id(k + 1).filter(|n| *n != "_").map(String::from);
            k += 2;
        }
        out.push((name, segs));
        k
    }

    /// Past a macro variable, the path's own tail (`::Presenter` of
    /// `super::$module::Presenter`), from the `::` at `k`; and where it ends.
    fn tail(&self, mut k: usize) -> (Vec<String>, usize) {
        let mut tail = Vec::new();
        while self.at(k) == Some(&T::Sep)
            && let Some(s) = self.id(k + 1)
        {
            tail.push(s.to_string());
            k += 2;
        }
        (tail, k)
    }

    /// `macro_rules! name { ... }`: its paths, templates and calls. Its
    /// body is read again as ordinary code, as the file it is in expands it.
    fn macro_rules(&mut self) {
        let Some(name) = self.id(self.i + 2).map(String::from) else {
            self.i += 2;
            return;
        };
        let open = self.i + 3;
        let close = self.close(open);
        let mut m = Macro::default();
        let mut k = open;
        while k < close {
            // `$m::Presenter`: the invocation fills in a path of its own module.
            if self.at(k) == Some(&T::P('$'))
                && self.id(k + 1).is_some_and(|v| v != "crate")
                && self.at(k + 2) == Some(&T::Sep)
                && !self.continues(k)
            {
                let (tail, next) = self.tail(k + 2);
                m.templates.push((Vec::new(), tail));
                k = next;
                continue;
            }
            if self.continues(k) {
                k += 1;
                continue;
            }
            let (segs, end, template) = self.read_path(k);
            if segs.is_empty() {
                k += 1;
                continue;
            }
            if template {
                m.templates.push((segs, self.tail(end + 2).0));
            } else if self.at(end) == Some(&T::P('!')) {
                m.calls.push(segs.last().unwrap().clone());
            } else if segs.len() >= 2 {
                m.paths.push(segs);
            }
            k = end.max(k + 1);
        }
        self.out.macros.entry(name).or_default().push(m);
        self.i = open;
    }
}
