//! A flashbench command line, pasted before its tables or given apart
//! (`import --command`): the options that shape the tables, with the
//! numbers people write for them in a shell.

use super::tokens::size;
use super::{Invocation, MAX_SIZE};

/// A shell number as people write flashbench's options: `4194304`,
/// `$[4 * 1024 * 1024]`, `$((4*1024*1024))`, `${preferred_erase_size:-4194304}`,
/// `4M`-style sizes. None for what only the shell knew.
pub(super) fn shell_number(text: &str) -> Option<u64> {
    let t = text.trim();
    let inner = if let Some(x) = t.strip_prefix("$[").and_then(|x| x.strip_suffix(']')) {
        x
    } else if let Some(x) = t.strip_prefix("$((").and_then(|x| x.strip_suffix("))")) {
        x
    } else if let Some(x) = t.strip_prefix("${").and_then(|x| x.strip_suffix('}')) {
        return x.split_once(":-").and_then(|(_, d)| shell_number(d));
    } else {
        return t
            .parse::<u64>()
            .ok()
            .or_else(|| crate::units::parse_size(t).ok())
            .filter(|&v| v <= MAX_SIZE);
    };
    inner.split('*').try_fold(1u64, |acc, f| {
        let v: u64 = f.trim().parse().ok()?;
        acc.checked_mul(v).filter(|&p| p <= MAX_SIZE)
    })
}

/// The tokens of a command line, with `$[4 * 1024]` kept as one.
fn shell_tokens(line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for w in line.split_whitespace() {
        if open {
            if let Some(last) = out.last_mut() {
                last.push_str(w);
            }
        } else {
            out.push(w.to_string());
        }
        let s = out.last().map_or("", String::as_str);
        let depth = s.matches("$[").count() + s.matches("$((").count();
        let closes = s.matches(']').count() + s.matches("))").count();
        open = depth > closes;
    }
    out
}

/// What may stand before a command on its line: a prompt or a wrapper.
fn prompt_like(t: &str) -> bool {
    matches!(t, "$" | "#" | "%" | "sudo" | "time" | "nice" | "ionice" | "exec" | "-E")
        || t.ends_with(['$', '#', '%'])
        || (t.ends_with(':') && (t.contains('@') || t.contains('~')))
        || t.starts_with('[')
        || (t.contains('=') && !t.starts_with('-'))
}

/// A command line given apart from the output (`import --command`), for
/// tables pasted without theirs.
pub fn command_line(text: &str) -> Option<Invocation> {
    let t = text.trim();
    let t = if t
        .split_whitespace()
        .next()
        .is_some_and(|w| w == "flashbench" || w.ends_with("/flashbench"))
    {
        t.to_string()
    } else {
        format!("flashbench {t}")
    };
    invocation(0, &t).map(|(inv, _)| inv)
}

/// A flashbench command line: the options after the `flashbench` word, and
/// where the arguments end (the tokens after are the start of a table, on
/// a line whose breaks an archive collapsed).
pub(super) fn invocation(line_no: usize, line: &str) -> Option<(Invocation, Vec<String>)> {
    let toks = shell_tokens(line);
    let at = toks
        .iter()
        .position(|t| t == "flashbench" || t.ends_with("/flashbench"))?;
    // A command, not prose naming one: only a prompt, sudo and the like
    // before it ("$", "#", "root@host:~/flashbench#", "sudo", "X=1").
    if !toks[..at].iter().all(|t| prompt_like(t)) {
        return None;
    }
    let mut inv = Invocation {
        line: line_no,
        text: line.to_string(),
        ..Invocation::default()
    };
    let mut any = false;
    let mut i = at + 1;
    let mut device_seen = false;
    while i < toks.len() {
        let t = toks[i].as_str();
        // After the device path, the first token that reads as a table row
        // ends the arguments.
        if device_seen && (size(t).is_some() || t == "align") {
            return any.then_some((inv, toks[i..].to_vec()));
        }
        let (name, inline) = match t.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (t, None),
        };
        let value = |i: &mut usize| -> Option<String> {
            if let Some(v) = &inline {
                return Some(v.clone());
            }
            *i += 1;
            toks.get(*i).cloned()
        };
        let number = |i: &mut usize, inv: &mut Invocation, opt: &str| -> Option<u64> {
            let v = value(i)?;
            let n = shell_number(&v);
            if n.is_none() {
                inv.unread.push(format!("{opt} {v}"));
            }
            n
        };
        match name {
            "-a" | "--align" => inv.align = true,
            "-O" | "--open-au" => inv.open_au = true,
            "-f" | "--find-fat" => inv.find_fat = true,
            "-s" | "--scatter" => inv.scatter = true,
            "-r" | "--random" => inv.random = true,
            "-b" | "--blocksize" => inv.blocksize = number(&mut i, &mut inv, "--blocksize"),
            "-e" | "--erasesize" => inv.erasesize = number(&mut i, &mut inv, "--erasesize"),
            "-0" | "--open-au-nr" => inv.open_au_nr = number(&mut i, &mut inv, "--open-au-nr"),
            "-F" | "--fat-nr" => inv.fat_nr = number(&mut i, &mut inv, "--fat-nr"),
            "-c" | "--count" | "-o" | "--out" | "-t" | "--offset" | "-S" | "--scatter-order" | "--scatter-span"
            | "-I" | "--interval-order" => {
                value(&mut i);
            }
            "-v" | "--verbose" | "-i" | "--interval" | "-p" | "\\" => {}
            _ if t.starts_with('-') => {}
            _ => device_seen = true,
        }
        any |= t.starts_with('-');
        i += 1;
    }
    any.then_some((inv, Vec::new()))
}
