//! The words of flashbench's output as it prints them: a pasted line made
//! plain, and its sizes, rates and times read back.

use super::MAX_SIZE;

/// A line as people paste it, made plain: terminal escapes (real, and
/// written out as `^[[A`), `^C`, carriage returns and mail quoting gone.
pub(super) fn clean(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // ESC [ params letter
            '\u{1b}' => skip_csi(&mut chars),
            '^' if chars.peek() == Some(&'[') => {
                chars.next();
                skip_csi(&mut chars);
            }
            '^' if chars.peek() == Some(&'C') => {
                chars.next();
            }
            '\r' => {}
            _ => s.push(c),
        }
    }
    let mut t = s.trim_start();
    while let Some(rest) = t.strip_prefix('>').or_else(|| t.strip_prefix('|')) {
        t = rest.trim_start();
    }
    t.trim_end().to_string()
}

/// After an escape (ESC, or `^[` written out): a control sequence's `[`,
/// its parameters and its final letter (or `~`), if one follows.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    if chars.peek() == Some(&'[') {
        chars.next();
        for n in chars.by_ref() {
            if n.is_ascii_alphabetic() || n == '~' {
                break;
            }
        }
    }
}

/// A token written as a size ("...KiB", "...B") that [`size`] does not
/// take: past 1 PiB, under a byte, or in a unit flashbench never prints
/// ("TiB", "PiB").
pub(super) fn broken_size(tok: &str) -> bool {
    split_unit(tok).is_some_and(|(_, unit)| unit == "B" || (unit.len() == 3 && unit.ends_with("iB")))
        && size(tok).is_none()
}

/// A size as flashbench prints it ("4MiB", "512KiB", "1.5MiB", "512B").
pub(super) fn size(tok: &str) -> Option<u64> {
    let (num, unit) = split_unit(tok)?;
    let mult: f64 = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let v = (num * mult).round();
    (v >= 1.0 && v <= MAX_SIZE as f64).then_some(v as u64)
}

/// A rate as flashbench prints it ("8.79M/s", "912K/s"), in bytes/s
/// (flashbench's K and M are 10^3 and 10^6, vm.c's R_BPS). A trailing
/// marker a poster added ("47K/s(*)") is dropped.
pub(super) fn rate(tok: &str) -> Option<f64> {
    let tok = tok.split('(').next().unwrap_or(tok);
    let body = tok.strip_suffix("/s")?;
    let (num, unit) = split_unit(body)?;
    let mult = match unit {
        "B" => 1.0,
        "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        _ => return None,
    };
    let v = num * mult;
    (v >= 0.0 && v.is_finite()).then_some(v)
}

/// A token printed where a rate goes ("...M/s") that is not one: "nan",
/// "inf" or a negative number, which flashbench's size over time never
/// gives. Its row is named and left out, not taken for prose.
pub(super) fn broken_rate(tok: &str) -> bool {
    let body = tok.split('(').next().unwrap_or(tok);
    body.strip_suffix("/s")
        .is_some_and(|b| b.ends_with(['B', 'K', 'M', 'G']))
        && rate(tok).is_none()
}

/// How a time's unit was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    /// As printed.
    Printed,
    /// "1e+03µ": 1,000 µs whose "s" flashbench's 8-byte buffer cut (µ
    /// takes two bytes, so "%.3gµs" of 999.5 µs and up needs nine).
    MicroCut,
    /// A negative number without its unit: flashbench's ns branch, cut.
    None,
}

/// A time: "735µs", "1.08ms", "5.85µs", "324ns", "1.2s" (µ also as the Greek
/// mu, "us", or mangled by a wrong charset), "1e+03µ" (read as 1,000 µs:
/// the one value of "%.3gµs" that does not fit flashbench's buffer). A bare
/// or "n"-ended negative number is flashbench issue #16's unitless diff, in
/// ns.
pub(super) fn time(tok: &str) -> Option<(f64, Unit)> {
    if let Ok(v) = tok.parse::<f64>() {
        return (v < 0.0 && v.is_finite()).then_some((v, Unit::None));
    }
    if let Some(n) = tok.strip_suffix('n')
        && !tok.ends_with("ns")
        && let Ok(v) = n.parse::<f64>()
    {
        return (v < 0.0).then_some((v, Unit::None));
    }
    let (num, unit) = split_unit(tok)?;
    let mult = match unit {
        "ns" => 1.0,
        "µs" | "μs" | "us" | "Âµs" | "\u{fffd}s" => 1e3,
        // Only "1e+03" fills the buffer's seven bytes with a µ after it.
        "µ" | "μ" | "Âµ" | "\u{fffd}" if num == 1000.0 => return Some((1e6, Unit::MicroCut)),
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some((num * mult, Unit::Printed))
}

/// "8.79M/s" → (8.79, "M"): the number (C's %g, exponent included) and what
/// follows it.
fn split_unit(tok: &str) -> Option<(f64, &str)> {
    let b = tok.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits = i;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if i == digits {
        return None;
    }
    if i + 1 < b.len() && b[i] == b'e' && (b[i + 1] == b'+' || b[i + 1] == b'-') {
        let mut j = i + 2;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > i + 2 {
            i = j;
        }
    }
    let num: f64 = tok[..i].parse().ok()?;
    num.is_finite().then_some((num, &tok[i..]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_real_and_written_out_go_and_the_text_stays() {
        assert_eq!(super::clean("\u{1b}[2K> 4MiB \u{1b}[1;31m5.3M/s\r"), "4MiB 5.3M/s");
        assert_eq!(super::clean("> ^[[A^[[D^[[A1MiB  12.3M/s"), "1MiB  12.3M/s");
        assert_eq!(super::clean("^C"), "");
        // An escape with no sequence after it takes nothing with it.
        assert_eq!(super::clean("a\u{1b}b"), "ab");
    }
}
