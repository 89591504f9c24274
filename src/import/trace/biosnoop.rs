//! biosnoop's output, bcc's (`biosnoop` or `biosnoop-bpfcc`, tools/biosnoop.py)
//! and libbpf-tools' (libbpf-tools/biosnoop.c): a header, then one line per
//! request (docs/notes/trace-formats.md, "biosnoop").
//!
//! biosnoop prints a request when it completes, so a record's time is its
//! completion time, not the time the device received it; and its TIME is
//! seconds since the first request printed.
//!
//! The columns are `TIME(s) COMM PID DISK T SECTOR BYTES [P] [QUE(ms)]
//! LAT(ms)` (`P` with bcc's -P, `QUE(ms)` with -Q; libbpf-tools prints
//! `TIMESTAMP` first in some versions). COMM is cut at 14 characters and
//! may hold spaces, or be empty, so a line is split from the right, by the
//! header's count of columns. SECTOR is in 512-byte sectors, BYTES in
//! bytes. bcc's T is `R` or `W` alone (discards and flushes print as `R`, a
//! flush with 0 bytes, which is skipped), libbpf-tools' a full RWBS.
//!
//! bcc prints DISK `<unknown>` for a request whose start it did not see,
//! and then leaves its sector 0 (`trace_req_completion` in biosnoop.py): such
//! a line names no place, and is left out, counted ([`Reader::unplaced`]). One disk is expected: a line of
//! another disk is an error.

use super::text::{fields, rwbs, seconds_ns, uint};
use super::{At, Input, Line, Request, TraceError};

const HINT: &str = "flashlab reads biosnoop's output as bcc's or libbpf-tools' biosnoop prints it: a header \
                    `TIME(s) COMM PID DISK T SECTOR BYTES [QUE(ms)] LAT(ms)`, then one line per request";

/// The most fields a line may split into (COMM's 14 characters make at
/// most 7 words, and there are 10 columns besides).
const MAX_FIELDS: usize = 24;

/// Whether a line is biosnoop's header (for telling the format).
pub(super) fn is_header(line: &[u8]) -> bool {
    line.starts_with(b"TIME(s)") || line.starts_with(b"TIMESTAMP")
}

/// The number of columns after COMM (from PID to LAT), from the header.
fn columns_after_comm(header: &[u8]) -> Option<usize> {
    let mut f = fields(header);
    if !matches!(f.next()?, b"TIME(s)" | b"TIMESTAMP") {
        return None;
    }
    for want in [&b"COMM"[..], b"PID", b"DISK", b"T", b"SECTOR", b"BYTES"] {
        if f.next()? != want {
            return None;
        }
    }
    let mut n = 5;
    let mut extras = [&b"P"[..], b"QUE(ms)"].into_iter();
    for col in f {
        n += 1;
        if col == b"LAT(ms)" {
            return Some(n);
        }
        // The optional columns, in their order.
        extras.find(|e| *e == col)?;
    }
    None
}

/// A decimal, maybe negative (libbpf-tools prints a QUE of -1).
fn is_decimal(s: &[u8]) -> bool {
    let s = s.strip_prefix(b"-").unwrap_or(s);
    !s.is_empty() && s.iter().all(|c| c.is_ascii_digit() || *c == b'.')
}

enum Parsed<'a> {
    Skip,
    /// A request of disk `<unknown>`: its bytes.
    Unplaced(u64),
    Request(Request, &'a [u8]),
}

fn parse(line: &[u8], right: usize) -> Result<Parsed<'_>, String> {
    let t = line.trim_ascii();
    if t.is_empty() {
        return Ok(Parsed::Skip);
    }
    if t.starts_with(b"Possibly lost") || t.starts_with(b"lost ") {
        return Err("biosnoop lost events here, so the trace misses requests".into());
    }
    let mut toks: [&[u8]; MAX_FIELDS] = [&[]; MAX_FIELDS];
    let mut n = 0;
    for f in fields(t) {
        if n == MAX_FIELDS {
            return Err("more fields than a biosnoop line has".into());
        }
        toks[n] = f;
        n += 1;
    }
    if n < 1 + right {
        return Err(format!("{n} fields, fewer than the header's columns"));
    }
    let time_ns = seconds_ns(toks[0])
        .ok_or_else(|| format!("'{}' is not a time in seconds", String::from_utf8_lossy(toks[0])))?;
    let cols = &toks[n - right..n];
    let number = |i: usize, what: &str| {
        uint(cols[i]).ok_or_else(|| format!("'{}' is not a {what}", String::from_utf8_lossy(cols[i])))
    };
    number(0, "PID")?;
    let sector = number(3, "sector")?;
    let bytes = number(4, "byte count")?;
    if !is_decimal(cols[right - 1]) {
        return Err(format!(
            "'{}' is not a latency",
            String::from_utf8_lossy(cols[right - 1])
        ));
    }
    let disk = cols[1];
    if disk == b"<unknown>" {
        return Ok(Parsed::Unplaced(bytes));
    }
    let (flush, op) =
        rwbs(cols[2]).ok_or_else(|| format!("'{}' is not an R, W or RWBS type", String::from_utf8_lossy(cols[2])))?;
    Ok(match Request::at_sector(time_ns, flush, op, sector, bytes)? {
        Some(r) => Parsed::Request(r, disk),
        None => Parsed::Skip,
    })
}

pub(super) struct Reader {
    input: Input,
    right: usize,
    disk: Option<Box<[u8]>>,
    /// Requests of disk `<unknown>` left out, and their bytes.
    unplaced: (u64, u64),
}

impl Reader {
    /// After the header (blank lines before it aside).
    pub(super) fn new(mut input: Input) -> Result<Reader, TraceError> {
        loop {
            let n = input.line + 1;
            let right = match input.next_line()? {
                Line::Whole(l) | Line::Last(l) if l.trim_ascii().is_empty() => continue,
                Line::Whole(l) | Line::Last(l) => columns_after_comm(l),
                Line::TooLong | Line::End => None,
            };
            let Some(right) = right else {
                let what = "not biosnoop's header (its columns from TIME(s) to LAT(ms))";
                return Err(TraceError::malformed(input.path(), At::Line(n), what, HINT));
            };
            return Ok(Reader {
                input,
                right,
                disk: None,
                unplaced: (0, 0),
            });
        }
    }

    pub(super) fn input(&self) -> &Input {
        &self.input
    }

    pub(super) fn next(&mut self) -> Result<Option<Request>, TraceError> {
        let (disk, right, unplaced) = (&mut self.disk, self.right, &mut self.unplaced);
        self.input.next_request(HINT, |l| {
            let parsed = parse(l, right);
            if let Ok(Parsed::Unplaced(bytes)) = parsed {
                unplaced.0 += 1;
                unplaced.1 = unplaced.1.saturating_add(bytes);
            }
            one_disk(disk, parsed)
        })
    }

    /// After the end: the requests left out because biosnoop named no
    /// disk for them, if any.
    pub(super) fn unplaced(&self) -> Option<String> {
        let (n, bytes) = self.unplaced;
        (n > 0).then(|| {
            format!(
                "{} of disk <unknown> ({}), whose start biosnoop did not see, left out",
                crate::units::count(n, "request", "requests"),
                crate::units::Iec(bytes)
            )
        })
    }
}

/// A line's request, of the trace's one disk (the first line's), or what
/// is wrong with it and the hint.
fn one_disk(
    disk: &mut Option<Box<[u8]>>,
    parsed: Result<Parsed<'_>, String>,
) -> Result<Option<Request>, (String, &'static str)> {
    let (request, this) = match parsed {
        Err(what) if what.contains("lost events") => {
            return Err((
                what,
                "trace again with fewer events (biosnoop -d DISK), so that biosnoop loses none",
            ));
        }
        Err(what) => return Err((what, HINT)),
        Ok(Parsed::Skip | Parsed::Unplaced(_)) => return Ok(None),
        Ok(Parsed::Request(r, this)) => (r, this),
    };
    match disk {
        None => *disk = Some(this.into()),
        Some(d) if **d != *this => {
            let what = format!(
                "a request of disk {} after requests of disk {}: a replay is of one device",
                String::from_utf8_lossy(this),
                String::from_utf8_lossy(d)
            );
            return Err((what, "trace one disk (biosnoop -d DISK), or keep one disk's lines"));
        }
        Some(_) => {}
    }
    Ok(Some(request))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::trace::TraceOp;

    #[test]
    fn headers_give_the_columns_after_comm() {
        let bcc = b"TIME(s)     COMM           PID     DISK      T SECTOR     BYTES  LAT(ms)";
        assert_eq!(columns_after_comm(bcc), Some(6));
        let bcc_q = b"TIME(s)     COMM           PID     DISK      T SECTOR     BYTES  QUE(ms) LAT(ms)";
        assert_eq!(columns_after_comm(bcc_q), Some(7));
        let bcc_pq = b"TIME(s)     COMM           PID     DISK      T SECTOR     BYTES  P QUE(ms) LAT(ms)";
        assert_eq!(columns_after_comm(bcc_pq), Some(8));
        let libbpf = b"TIMESTAMP    COMM           PID     DISK    T    SECTOR     BYTES   QUE(ms) LAT(ms)";
        assert_eq!(columns_after_comm(libbpf), Some(7));
        assert_eq!(
            columns_after_comm(b"TIME(s) COMM PID DISK T SECTOR BYTES QUE(ms) P LAT(ms)"),
            None
        );
        assert_eq!(columns_after_comm(b"TIME(s) COMM PID DISK T SECTOR BYTES"), None);
        assert_eq!(columns_after_comm(b"TIME(s) COMM PID T SECTOR BYTES LAT(ms)"), None);
    }

    fn req(line: &str, right: usize) -> Option<Request> {
        match parse(line.as_bytes(), right).unwrap() {
            Parsed::Request(r, _) => Some(r),
            Parsed::Skip | Parsed::Unplaced(_) => None,
        }
    }

    #[test]
    fn lines_split_from_the_right() {
        // bcc, a COMM with spaces.
        let r = req(
            "0.004217    kworker/u8:2 x 1234    sda       W 2048       4096      0.35",
            6,
        )
        .unwrap();
        assert_eq!(r.time_ns, 4_217_000);
        assert_eq!(r.io, Some((TraceOp::Write, 2048 * 512, 4096)));
        assert!(!r.flush);
        // An empty COMM.
        let r = req(
            "1.000001                   0       sda       R 8          512       0.01",
            6,
        )
        .unwrap();
        assert_eq!(r.io, Some((TraceOp::Read, 4096, 512)));
        // libbpf-tools, RWBS and a QUE column of -1.
        let r = req(
            "2.500000    fio            17710   nvme0n1 FWS  16         4096     -1.000   0.120",
            7,
        )
        .unwrap();
        assert_eq!(r.time_ns, 2_500_000_000);
        assert!(r.flush);
        assert_eq!(r.io, Some((TraceOp::Write, 16 * 512, 4096)));
        let r = req(
            "2.600000    blkdiscard     1       nvme0n1 D    0          1048576   0.500",
            6,
        )
        .unwrap();
        assert_eq!(r.io, Some((TraceOp::Discard, 0, 1 << 20)));
        let r = req(
            "2.700000    jbd2/sda1-8    300     sda     F    0          0         0.900",
            6,
        )
        .unwrap();
        assert!(r.flush);
        assert_eq!(r.io, None);
        // bcc's flush: R of no bytes asks nothing; a request it did not see start names no sector.
        assert_eq!(req("3.0 ? 0 sda R 0 0 0.01", 6), None);
        assert_eq!(req("3.0 ? 0 <unknown> W 0 4096 0.01", 6), None);
    }

    #[test]
    fn malformed_lines_say_why() {
        for bad in [
            "0.1 fio 1 sda W 8 4096",
            "x fio 1 sda W 8 4096 0.1",
            "0.1 fio 1 sda X 8 4096 0.1",
            "0.1 fio 1 sda W -8 4096 0.1",
            "0.1 fio 1 sda W 8 4096 fast",
            "0.1234567891 fio 1 sda W 8 4096 0.1",
            "Possibly lost 12 samples",
        ] {
            assert!(parse(bad.as_bytes(), 6).is_err(), "{bad}");
        }
    }
}
