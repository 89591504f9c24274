//! The fields of the text formats' lines, read as the tools print them:
//! whitespace-separated fields, decimal numbers, seconds with a fraction,
//! and RWBS, the request type blkparse and libbpf-tools' biosnoop print.
//! Each reads a byte slice, so a line is parsed where it lies in the
//! buffer, with nothing allocated.

use super::TraceOp;

/// An RWBS string read: whether a flush goes first, and the operation that
/// carries data (None for `N`, no data). blkparse builds it in `fill_rwbs`
/// (blkparse_fmt.c; docs/notes/trace-formats.md): a leading `F` is a
/// preflush, then `D` discard, `W` write, `R` read or `N` no data, then `F`
/// (FUA), `A`, `S`, `M`. libbpf-tools' biosnoop builds its own
/// (`blk_fill_rwbs` in libbpf-tools/biosnoop.c): the same, but a flush
/// request's operation prints as `F` and a secure erase as `DE`. bcc's
/// biosnoop prints `R` or `W` alone. So `F` or `FS` is a flush, `FWS` a
/// flushed write, `FN` a pure flush.
pub(super) fn rwbs(s: &[u8]) -> Option<(bool, Option<TraceOp>)> {
    let is_op = |c: u8| matches!(c, b'W' | b'D' | b'R' | b'N' | b'F');
    let (preflush, rest) = match s {
        [b'F', c, ..] if is_op(*c) => (true, &s[1..]),
        _ => (false, s),
    };
    let (&op, mut tail) = rest.split_first()?;
    let (flush, op) = match op {
        b'W' => (preflush, Some(TraceOp::Write)),
        b'R' => (preflush, Some(TraceOp::Read)),
        b'D' => {
            if let [b'E', more @ ..] = tail {
                tail = more;
            }
            (preflush, Some(TraceOp::Discard))
        }
        b'N' => (preflush, None),
        b'F' => (true, None),
        _ => return None,
    };
    tail.iter()
        .all(|c| matches!(c, b'F' | b'A' | b'S' | b'M'))
        .then_some((flush, op))
}

/// The whitespace-separated fields of a line.
pub(super) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| b.is_ascii_whitespace()).filter(|f| !f.is_empty())
}

/// A decimal number of digits only.
pub(super) fn uint(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    s.iter().try_fold(0u64, |n, &c| {
        c.is_ascii_digit()
            .then_some(())
            .and_then(|_| n.checked_mul(10)?.checked_add(u64::from(c - b'0')))
    })
}

/// Seconds with a decimal fraction of at most nine digits ("12.000345"),
/// in nanoseconds, exactly (no float on the way).
pub(super) fn seconds_ns(s: &[u8]) -> Option<u64> {
    let (whole, frac) = match s.iter().position(|&c| c == b'.') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &b""[..]),
    };
    if frac.len() > 9 || (!frac.is_empty() && uint(frac).is_none()) {
        return None;
    }
    let mut ns = if frac.is_empty() { 0 } else { uint(frac)? };
    for _ in frac.len()..9 {
        ns *= 10;
    }
    uint(whole)?.checked_mul(1_000_000_000)?.checked_add(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs_reads_blkparse_and_libbpf_tools_spellings() {
        use TraceOp::*;
        for (s, want) in [
            ("W", Some((false, Some(Write)))),
            ("WS", Some((false, Some(Write)))),
            ("FWFS", Some((true, Some(Write)))),
            ("FWS", Some((true, Some(Write)))),
            ("RA", Some((false, Some(Read)))),
            ("RM", Some((false, Some(Read)))),
            ("D", Some((false, Some(Discard)))),
            ("DE", Some((false, Some(Discard)))),
            ("FN", Some((true, None))),
            ("N", Some((false, None))),
            ("F", Some((true, None))),
            ("FS", Some((true, None))),
            ("FF", Some((true, None))),
            ("", None),
            ("X", None),
            ("WX", None),
            ("WE", None),
        ] {
            assert_eq!(rwbs(s.as_bytes()), want, "{s}");
        }
        assert_eq!(seconds_ns(b"12.5"), Some(12_500_000_000));
        assert_eq!(seconds_ns(b"0.000000001"), Some(1));
        assert_eq!(seconds_ns(b"3"), Some(3_000_000_000));
        assert_eq!(seconds_ns(b"1.0000000001"), None);
        assert_eq!(seconds_ns(b"18446744074"), None);
        assert_eq!(uint(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(uint(b"18446744073709551616"), None);
        assert_eq!(uint(b"-1"), None);
    }
}
