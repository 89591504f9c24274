//! fio's iologs, versions 2 and 3 (docs/notes/trace-formats.md, "fio
//! iolog"; fio's reader is `read_iolog` in iolog.c, its writer `log_io_u`
//! and `log_file`).
//!
//! - Version 2: `FILE add|open|close`, and `FILE ACTION OFFSET LENGTH` in
//!   bytes. Its lines carry no time: `wait OFFSET` waits until OFFSET
//!   milliseconds since fio started (iolog.c compares it with
//!   `mtime_since_genesis()` and sleeps the difference times 1000 µs; the
//!   HOWTO's "microseconds since the last wait" is not what the code does),
//!   so every record gets the time of the last wait, never going back.
//! - Version 3: every line starts with its time in microseconds since the
//!   run started; `wait` is not allowed.
//!
//! `trim` is a discard. `sync`, `datasync`, and `sync_file_range` and
//! `syncfs` (which fio's writer emits and its reader rejects) are flushes:
//! each asks the device to make written data durable, which is all a
//! replay can do with it. A sync line may come with or without `OFFSET
//! LENGTH` (fio writes `sync OFFSET 0`); reads, writes and trims need them.
//!
//! Offsets are the file's; they are the device's when the job's file was
//! the block device, which is the only log a replay of one device can use.
//! So I/O must name a file the log added, and one file only: a second file
//! with I/O is an error, not a mix of two files' offsets.

use super::text::{fields, uint};
use super::{Input, Line, Request, TraceError, TraceOp};

const HINT: &str = "fio iologs are read as fio writes them (iolog.c): after `fio version 2 iolog`, lines \
                    `FILE add|open|close` and `FILE read|write|trim|sync|datasync|wait OFFSET LENGTH`; after `fio \
                    version 3 iolog`, the same with a time in microseconds first";

/// More files than this is not a log of one device.
const MAX_FILES: usize = 1024;

/// What the lines so far have set up.
struct State {
    v3: bool,
    time_ns: u64,
    added: Vec<Box<[u8]>>,
    /// The file with I/O, an index into `added`.
    io_file: Option<usize>,
}

impl State {
    fn parse(&mut self, line: &[u8]) -> Result<Option<Request>, String> {
        let mut toks: [&[u8]; 6] = [&[]; 6];
        let mut n = 0;
        for t in fields(line) {
            if n == toks.len() {
                return Err("more fields than an iolog line has".into());
            }
            toks[n] = t;
            n += 1;
        }
        if n == 0 {
            return Ok(None);
        }
        let mut toks = &toks[..n];
        if self.v3 {
            let us = uint(toks[0]).ok_or_else(|| format!("'{}' is not a time in microseconds", text(toks[0])))?;
            self.time_ns = us.checked_mul(1000).ok_or("a time past any trace")?;
            toks = &toks[1..];
        }
        let &[file, action, ref tail @ ..] = toks else {
            return Err("no FILE ACTION on the line".into());
        };
        let range = match tail {
            [] => None,
            &[offset, len] => Some((
                uint(offset).ok_or_else(|| format!("'{}' is not an offset", text(offset)))?,
                uint(len).ok_or_else(|| format!("'{}' is not a length", text(len)))?,
            )),
            _ => return Err(format!("'{}' takes no fields or OFFSET LENGTH", text(action))),
        };
        match (action, range) {
            (b"add", None) => {
                if !self.added.iter().any(|f| **f == *file) {
                    if self.added.len() == MAX_FILES {
                        return Err(format!("more than {MAX_FILES} files added"));
                    }
                    self.added.push(file.into());
                }
                Ok(None)
            }
            (b"open" | b"close", None) => self.file(file).map(|_| None),
            (b"wait", Some((ms, _))) if !self.v3 => {
                let at = ms.checked_mul(1_000_000).ok_or("a wait past any trace")?;
                self.time_ns = self.time_ns.max(at);
                Ok(None)
            }
            (b"wait", _) if self.v3 => Err("'wait' in a version 3 log, whose lines carry their times".into()),
            (b"read" | b"write" | b"trim", Some((offset, len))) => {
                self.io(file)?;
                let op = match action {
                    b"read" => TraceOp::Read,
                    b"write" => TraceOp::Write,
                    _ => TraceOp::Discard,
                };
                Request::new(self.time_ns, false, Some(op), offset, len)
            }
            (b"sync" | b"datasync" | b"sync_file_range" | b"syncfs", _) => {
                self.io(file)?;
                Request::new(self.time_ns, true, None, 0, 0)
            }
            (b"add" | b"open" | b"close", Some(_)) => Err(format!("'{}' takes no OFFSET LENGTH", text(action))),
            (b"read" | b"write" | b"trim" | b"wait", None) => Err(format!("'{}' needs OFFSET LENGTH", text(action))),
            _ => Err(format!("'{}' is not an iolog action", text(action))),
        }
    }

    /// The index of a file the log added.
    fn file(&self, file: &[u8]) -> Result<usize, String> {
        self.added
            .iter()
            .position(|f| **f == *file)
            .ok_or_else(|| format!("'{}' was never added (FILE add)", text(file)))
    }

    /// A file with I/O: added, and the same as any before.
    fn io(&mut self, file: &[u8]) -> Result<(), String> {
        let i = self.file(file)?;
        match self.io_file {
            None => self.io_file = Some(i),
            Some(j) if j != i => {
                return Err(format!(
                    "I/O on '{}' after I/O on '{}': a replay is of one device",
                    text(file),
                    text(&self.added[j])
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

pub(super) struct Reader {
    input: Input,
    state: State,
}

impl Reader {
    /// After the version line (blank lines before it aside).
    pub(super) fn new(mut input: Input) -> Result<Reader, TraceError> {
        let v3 = loop {
            match input.next_line()? {
                Line::Whole(l) | Line::Last(l) if l.trim_ascii().is_empty() => {}
                Line::Whole(l) | Line::Last(l) => break l.trim_ascii() == b"fio version 3 iolog",
                Line::TooLong | Line::End => break false,
            }
        };
        Ok(Reader {
            input,
            state: State {
                v3,
                time_ns: 0,
                added: Vec::new(),
                io_file: None,
            },
        })
    }

    pub(super) fn input(&self) -> &Input {
        &self.input
    }

    pub(super) fn next(&mut self) -> Result<Option<Request>, TraceError> {
        let state = &mut self.state;
        self.input.next_request(HINT, |l| {
            state.parse(l).map_err(|what| {
                let hint = if what.contains("one device") {
                    "a replay is of one device: keep one file's lines (grep ' FILE ' LOG), or log a job whose file \
                     is the device"
                } else {
                    HINT
                };
                (what, hint)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(v3: bool) -> State {
        State {
            v3,
            time_ns: 0,
            added: Vec::new(),
            io_file: None,
        }
    }

    fn run(s: &mut State, lines: &[&str]) -> Vec<Request> {
        lines
            .iter()
            .filter_map(|l| s.parse(l.as_bytes()).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    }

    /// A request's time, flush and I/O.
    type Timed = (u64, bool, Option<(TraceOp, u64, u64)>);

    /// A whole log read from the start, request by request.
    fn timed(v3: bool, lines: &[&str]) -> Vec<Timed> {
        let got = run(&mut state(v3), lines);
        got.iter().map(|r| (r.time_ns, r.flush, r.io)).collect()
    }

    #[test]
    fn version_2_waits_set_the_time_in_milliseconds_since_the_start() {
        let got = timed(
            false,
            &[
                "/dev/sdb add",
                "/dev/sdb open",
                "/dev/sdb write 0 4096",
                "/dev/sdb wait 5 0",
                "/dev/sdb read 4096 512",
                "/dev/sdb wait 2 0",
                "/dev/sdb trim 8192 1048576",
                "/dev/sdb sync 0 0",
                "/dev/sdb datasync",
                "/dev/sdb close",
            ],
        );
        let want = [
            (0, false, Some((TraceOp::Write, 0, 4096))),
            (5_000_000, false, Some((TraceOp::Read, 4096, 512))),
            // A wait for a time already past does not go back.
            (5_000_000, false, Some((TraceOp::Discard, 8192, 1 << 20))),
            (5_000_000, true, None),
            (5_000_000, true, None),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn version_3_times_are_microseconds() {
        let got = timed(
            true,
            &[
                "31 /dev/loop0 add",
                "167 /dev/loop0 open",
                "171 /dev/loop0 write 61440 4096",
                "1649 /dev/loop0 sync 110592 0",
                "1700 /dev/loop0 syncfs",
                "1800 /dev/loop0 sync_file_range 0 4096",
                "2000 /dev/loop0 write 0 0",
                "20139 /dev/loop0 close",
            ],
        );
        assert_eq!(
            got,
            [
                (171_000, false, Some((TraceOp::Write, 61440, 4096))),
                (1_649_000, true, None),
                (1_700_000, true, None),
                (1_800_000, true, None),
            ]
        );
    }

    #[test]
    fn files_must_be_added_and_one_only() {
        let mut s = state(false);
        assert!(s.parse(b"/dev/sdb write 0 4096").unwrap_err().contains("never added"));
        run(
            &mut s,
            &["/dev/sdb add", "/dev/sdc add", "/dev/sdb write 0 4096", "/dev/sdc open"],
        );
        assert!(s.parse(b"/dev/sdc write 0 4096").unwrap_err().contains("one device"));
    }

    #[test]
    fn malformed_lines_say_why() {
        let mut s = state(false);
        run(&mut s, &["f add"]);
        for bad in [
            "f write 0",
            "f write x 4096",
            "f frob 0 0",
            "f add 0 0",
            "f write 0 1 2 3 4",
            "f read",
        ] {
            assert!(s.parse(bad.as_bytes()).is_err(), "{bad}");
        }
        let mut s = state(true);
        run(&mut s, &["1 f add"]);
        for bad in ["f write 0 4096", "2 f wait 3 0", "18446744073709551615 f write 0 1"] {
            assert!(s.parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert!(s.parse(b"3 f write 18446744073709551615 2").is_err());
    }
}
