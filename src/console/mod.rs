//! The terminal, at the bottom of every layer: stdout and stderr that never
//! panic ([`stdio`], with the `out!`, `outln!` and `errln!` macros), the one
//! table layout ([`table`]) and word wrapping. Every layer prints through
//! here; nothing here knows what is printed.

pub mod stdio;
pub mod table;

/// Words wrapped to 79 columns (an 80-column terminal), the first line
/// after `first`, the rest after `rest`.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    const WIDTH: usize = 79;
    let mut out = String::from(first);
    let mut col = first.chars().count();
    let mut fresh = true;
    for word in text.split_whitespace() {
        let w = word.chars().count();
        if !fresh && col + 1 + w > WIDTH {
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
