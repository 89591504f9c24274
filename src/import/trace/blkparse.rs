//! blkparse's default text output: one event per line, then summary blocks
//! (docs/notes/trace-formats.md, "blkparse, default text output"; the line
//! is printed by `process_default` in blkparse_fmt.c). Each line begins
//! `"%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s "`: device, CPU, sequence,
//! seconds.nanoseconds, pid, action, RWBS. For Q and D what follows is
//! `SECTOR + NSECT [comm]` (an elapsed time before `[comm]` with `-t`),
//! `[comm]` alone with no sectors, or `BYTES (payload) [comm]` for a
//! passthrough command, which names no sectors and is skipped.
//!
//! One device is expected: the first device of a kept event is the trace's,
//! and an event of another device is an error (not a silent mix of two
//! devices' sectors in one replay).

use super::text::{fields, rwbs, seconds_ns, uint};
use super::{At, Events, Input, Line, MAX_LINE, Request, TraceError};

const HINT: &str = "flashlab reads blkparse's default output (no -f or -F format), lines such as \
                    `  8,0    3        1     0.000000000   697  D   W 223490 + 8 [kjournald]`";

/// The start of one event line.
struct Head<'a> {
    device: (u64, u64),
    time_ns: u64,
    action: &'a [u8],
    rwbs: &'a [u8],
}

/// The seven fields every event line begins with, or None.
fn head<'a>(f: &mut impl Iterator<Item = &'a [u8]>) -> Option<Head<'a>> {
    let dev = f.next()?;
    let comma = dev.iter().position(|&c| c == b',')?;
    let device = (uint(&dev[..comma])?, uint(&dev[comma + 1..])?);
    uint(f.next()?)?; // CPU
    uint(f.next()?)?; // sequence
    let time = f.next()?;
    // `%5d.%09lu`: exactly nine digits of nanoseconds.
    if time.len() < 11 || time[time.len() - 10] != b'.' {
        return None;
    }
    let time_ns = seconds_ns(time)?;
    uint(f.next()?)?; // pid
    let action = f.next()?;
    if action.is_empty() || action.len() > 2 || !action.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let rwbs = f.next()?;
    Some(Head {
        device,
        time_ns,
        action,
        rwbs,
    })
}

/// Whether a line is a blkparse event line (for telling the format).
pub(super) fn is_event_line(line: &[u8]) -> bool {
    head(&mut fields(line)).is_some()
}

/// The summary blocks after the events: `CPU0 (NAME):` per CPU, `Total
/// (NAME):`, then throughput and counts (`show_device_and_cpu_stats` in
/// blkparse.c; with -s, each process's block comes first,
/// `show_process_stats`). The events end there.
fn is_summary(line: &[u8]) -> bool {
    if line.starts_with(b"Total (") {
        return true;
    }
    let Some(rest) = line.strip_prefix(b"CPU") else {
        return false;
    };
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    digits > 0 && rest[digits..].starts_with(b" (")
}

enum Parsed {
    Skip,
    Stop,
    Request(Request, (u64, u64)),
}

fn parse(line: &[u8], action: u8) -> Result<Parsed, String> {
    let t = line.trim_ascii();
    if t.is_empty() || t.starts_with(b"Input file ") {
        return Ok(Parsed::Skip);
    }
    if is_summary(t) {
        return Ok(Parsed::Stop);
    }
    let mut f = fields(t);
    let h = head(&mut f).ok_or("not a blkparse event line")?;
    if h.action != [action] {
        return Ok(Parsed::Skip);
    }
    let (flush, op) =
        rwbs(h.rwbs).ok_or_else(|| format!("'{}' is not an RWBS field", String::from_utf8_lossy(h.rwbs)))?;
    let (sector, sectors) = match f.next() {
        None => return Err("the event stops after its RWBS field".into()),
        // No sectors: `[comm]`, or `(elapsed) [comm]` with -t.
        Some(tok) if tok.starts_with(b"[") || tok.starts_with(b"(") => (0, 0),
        Some(tok) => {
            let sector = uint(tok).ok_or_else(|| format!("'{}' is not a sector", String::from_utf8_lossy(tok)))?;
            match f.next() {
                Some(b"+") => {
                    let n = f.next().and_then(uint).ok_or("no sector count after '+'")?;
                    (sector, n)
                }
                // `BYTES (payload) [comm]` or `BYTES [comm]`: a passthrough command.
                Some(next) if next.starts_with(b"(") || next.starts_with(b"[") => return Ok(Parsed::Skip),
                _ => return Err("a sector not followed by '+ COUNT'".into()),
            }
        }
    };
    let bytes = sectors
        .checked_mul(512)
        .ok_or_else(|| format!("{sectors} sectors is past any device"))?;
    Ok(match Request::at_sector(h.time_ns, flush, op, sector, bytes)? {
        Some(r) => Parsed::Request(r, h.device),
        None => Parsed::Skip,
    })
}

pub(super) struct Reader {
    input: Input,
    action: u8,
    device: Option<(u64, u64)>,
}

impl Reader {
    pub(super) fn new(input: Input, events: Events) -> Reader {
        Reader {
            input,
            action: match events {
                Events::Dispatch => b'D',
                Events::Queue => b'Q',
            },
            device: None,
        }
    }

    pub(super) fn input(&self) -> &Input {
        &self.input
    }

    pub(super) fn next(&mut self) -> Result<Option<Request>, TraceError> {
        while !self.input.ended {
            let n = self.input.line + 1;
            let (parsed, last, len, closed) = match self.input.next_line()? {
                Line::End => break,
                Line::TooLong => {
                    let what = format!("a line longer than {MAX_LINE} bytes");
                    return Err(TraceError::malformed(self.input.path(), At::Line(n), what, HINT));
                }
                Line::Whole(l) => (parse(l, self.action), false, l.len(), true),
                // A kept event's line ends with its `[comm]`: one that does
                // not was cut short.
                Line::Last(l) => (parse(l, self.action), true, l.len(), l.trim_ascii_end().ends_with(b"]")),
            };
            let cut_short = last
                && (self.input.cut.is_some()
                    || parsed.is_err()
                    || matches!(parsed, Ok(Parsed::Request(..)) if !closed));
            if cut_short {
                self.input.dropped = Some(format!("its last line is cut short, {len} bytes dropped"));
                break;
            }
            match parsed {
                // The heading of a summary block (a process's with -s,
                // `NAME (PID)`, comes before the CPUs'): its counts follow.
                Err(_) if self.input.peek(14)?.starts_with(b" Reads Queued:") => break,
                Err(what) => return Err(TraceError::malformed(self.input.path(), At::Line(n), what, HINT)),
                Ok(Parsed::Skip) => {}
                Ok(Parsed::Stop) => break,
                Ok(Parsed::Request(r, device)) => {
                    match self.device {
                        None => self.device = Some(device),
                        Some(d) if d != device => {
                            let what = format!(
                                "an event of device {},{} after events of device {},{}: a replay is of one device",
                                device.0, device.1, d.0, d.1
                            );
                            let hint = "give blkparse one device's trace (blkparse -i NAME, the NAME of one \
                                        device's NAME.blktrace.N files)";
                            return Err(TraceError::malformed(self.input.path(), At::Line(n), what, hint));
                        }
                        Some(_) => {}
                    }
                    return Ok(Some(r));
                }
            }
        }
        self.input.ended = true;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::trace::TraceOp;

    fn req(line: &str, action: u8) -> Option<Request> {
        match parse(line.as_bytes(), action).unwrap() {
            Parsed::Request(r, _) => Some(r),
            Parsed::Skip | Parsed::Stop => None,
        }
    }

    #[test]
    fn event_lines_are_told_from_the_rest() {
        assert!(is_event_line(
            b"  8,0    3        1     0.000000000   697  D   W 223490 + 8 [kjournald]"
        ));
        assert!(!is_event_line(b"259,0    0        0     1.5 1 D W 0 + 8 [x]"));
        assert!(!is_event_line(b"CPU0 (sda):"));
        assert!(!is_event_line(b" Reads Queued:           0,        0KiB"));
        assert!(is_summary(b"CPU12 (randw):"));
        assert!(is_summary(b"Total (8,0):"));
        assert!(!is_summary(b"CPU (x)"));
    }

    #[test]
    fn d_and_q_events_become_requests() {
        let w = req(
            "  8,0    3        1     0.000000000   697  D   W 223490 + 8 [kjournald]",
            b'D',
        )
        .unwrap();
        assert_eq!(w.time_ns, 0);
        assert_eq!(w.io, Some((TraceOp::Write, 223_490 * 512, 4096)));
        assert!(!w.flush);
        let fw = req("  8,0  0  2  1.000000007  1  Q FWFS 16 + 16 [fio]", b'Q').unwrap();
        assert_eq!(fw.time_ns, 1_000_000_007);
        assert!(fw.flush);
        assert_eq!(fw.io, Some((TraceOp::Write, 16 * 512, 8192)));
        let d = req("  8,0  0  2  1.000000007  1  D   D 2048 + 2048 [blkdiscard]", b'D').unwrap();
        assert_eq!(d.io, Some((TraceOp::Discard, 2048 * 512, 1 << 20)));
        let r = req("  8,0  0  2  1.000000007  1  D  RA 8 + 8 (    1234) [cat]", b'D').unwrap();
        assert_eq!(r.io, Some((TraceOp::Read, 4096, 4096)));
        // The other action is skipped.
        assert_eq!(req("  8,0  0  2  1.000000007  1  Q   W 8 + 8 [x]", b'D'), None);
    }

    #[test]
    fn flushes_are_kept_and_no_data_events_skipped() {
        let f = req("  7,0    1        0     0.001427917    24  D  FN [(null)]", b'D').unwrap();
        assert!(f.flush);
        assert_eq!(f.io, None);
        // A flush bio as queued: a preflushed write of no data.
        let q = req("  7,0    1        0     0.001405414 17710  Q FWS [(null)]", b'Q').unwrap();
        assert!(q.flush);
        assert_eq!(q.io, None);
        assert_eq!(req("  8,0  0  2  1.000000007  1  D   N [x]", b'D'), None);
        // A passthrough command names no sectors.
        assert_eq!(
            req("  8,0  0  2  1.000000007  1  D   N 0 (00 12 00) [kworker/u65:0]", b'D'),
            None
        );
        assert_eq!(req("  8,0  0  2  1.000000007  1  D   N 36 [scsi_id]", b'D'), None);
        // Notes, remaps and the rest are skipped.
        assert_eq!(
            req("  8,0  0  0  0.000000000  0  m   N cfq96 insert_request", b'D'),
            None
        );
        assert_eq!(req("  8,0  0  2  1.000000007  1  A   W 8 + 8 <- (8,1) 0", b'D'), None);
        assert_eq!(req("Input file sda.blktrace.0 added", b'D'), None);
    }

    #[test]
    fn malformed_events_say_why() {
        for bad in [
            "  8,0  0  2  1.000000007  1  D   W 8 + [x]",
            "  8,0  0  2  1.000000007  1  D   W 8 - 8 [x]",
            "  8,0  0  2  1.000000007  1  D   X 8 + 8 [x]",
            "  8,0  0  2  1.000000007  1  D   W",
            "  8,0  0  2  1.000000007  1  D   W 99999999999999999999 + 8 [x]",
            "  8,0  0  2  1.000000007  1  D   W 36028797018963968 + 8 [x]",
            "something else",
        ] {
            assert!(parse(bad.as_bytes(), b'D').is_err(), "{bad}");
        }
    }
}
