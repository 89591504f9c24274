//! A simulated card's flashbench session, printed exactly as flashbench
//! prints it: the access patterns are flashlab's reproduction of
//! flashbench's (src/sim/reproduce/flashbench.rs), the text follows its
//! format (C's "%.3g" cut to flashbench's 8-byte buffers, flashbench issue #16's
//! unitless negative diffs included). So the import is tested on cards
//! whose truth is known, with the card's own noise in every row.

use std::fmt::Write;

use crate::random::chunk_sizes;
use crate::sim::SimTarget;
use crate::sim::reproduce::flashbench::{align_row, find_fat, max_align, open_au};
use crate::targets::Target;

/// The flashbench runs a user made, in order, to render as their pasted
/// output.
#[derive(Debug, Clone)]
pub struct UserRuns {
    /// How many `-a` runs, pasted one after another.
    pub align_runs: usize,
    /// `-a --blocksize`.
    pub align_block: u64,
    /// Also print 3 x 2^n boundaries (a flashbench variant, as in the
    /// Patriot post of the flashbench-results list).
    pub threes: bool,
    /// `--erasesize` given to --open-au and --find-fat.
    pub erasesize: u64,
    /// `--blocksize` of --open-au and --find-fat.
    pub blocksize: u64,
    /// `--open-au-nr` values run in order, then with --random.
    pub linear: Vec<u64>,
    pub random: Vec<u64>,
    pub find_fat: bool,
}

/// C's `%.{p}g`.
pub fn c_g(x: f64, p: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".into();
    }
    let sci = format!("{:.*e}", p.saturating_sub(1), x);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if exp < -4 || exp >= p as i32 {
        format!(
            "{}e{}{:02}",
            trim(mant.to_string()),
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim(format!("{x:.decimals$}"))
    }
}

/// `snprintf(buf, 8, ...)`: at most 7 bytes.
fn cut7(s: String) -> String {
    let mut end = s.len().min(7);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// flashbench's one way of printing a figure in four tiers of `step`: the
/// whole number below one step, then three significant digits, four in the
/// last tier (its `format_ns`, and vm.c's sizes and rates).
fn tiered(v: i64, step: f64, units: [&str; 4]) -> String {
    let x = v as f64;
    if x < step {
        format!("{v}{}", units[0])
    } else if x < step * step {
        format!("{}{}", c_g(x / step, 3), units[1])
    } else if x < step * step * step {
        format!("{}{}", c_g(x / (step * step), 3), units[2])
    } else {
        format!("{}{}", c_g(x / (step * step * step), 4), units[3])
    }
}

/// flashbench.c's `format_ns`.
pub fn format_ns(ns: i64) -> String {
    cut7(tiered(ns, 1e3, ["ns", "µs", "ms", "s"]))
}

/// vm.c's sizes and rates, cut and padded to 7 characters.
fn pad7(s: String) -> String {
    format!("{:<7}", cut7(s))
}

pub fn format_bytes(l: u64) -> String {
    pad7(tiered(
        i64::try_from(l).unwrap_or(i64::MAX),
        1024.0,
        ["B", "KiB", "MiB", "GiB"],
    ))
}

pub fn format_rate(bps: f64) -> String {
    pad7(tiered(bps as i64, 1e3, ["B/s", "K/s", "M/s", "G/s"]))
}

/// The boundaries of one `-a` run, largest first, with the read interval
/// each is sampled at (odd multiples of it, as flashbench's are).
fn boundaries(size: u64, block: u64, threes: bool) -> Vec<(u64, u64)> {
    let max = max_align(size, block);
    let mut out = Vec::new();
    let mut a = max;
    while a >= 2 * block {
        out.push((a, max));
        let three = 3 * (a / 2);
        if threes && a / 2 >= 2 * block && three < max && three.is_multiple_of(block) {
            // Odd multiples of 3 x 2^n: an interval of an even number of them.
            let m = (max / three.next_power_of_two()).max(2);
            out.push((three, three * m));
        }
        a /= 2;
    }
    out.sort_by_key(|x| std::cmp::Reverse(x.0));
    out
}

/// The session's text, as a terminal would show it.
pub fn render(t: &mut SimTarget, s: &UserRuns) -> String {
    let mut o = String::new();
    let size = t.description().size_bytes;
    let dev = "/dev/mmcblk0";
    for _ in 0..s.align_runs {
        let _ = writeln!(o, "$ sudo ./flashbench -a {dev} --blocksize={}", s.align_block);
        for (a, interval) in boundaries(size, s.align_block, s.threes) {
            let [pre, on, post] = align_row(t, s.align_block, a, interval, 8).map(|v| v as i64);
            let diff = on - (pre + post) / 2;
            let _ = writeln!(
                o,
                "align {a}\tpre {}\ton {}\tpost {}\tdiff {}",
                format_ns(pre),
                format_ns(on),
                format_ns(post),
                format_ns(diff)
            );
        }
    }
    let chunks = chunk_sizes(s.erasesize, s.blocksize);
    for (random, counts) in [(false, &s.linear), (true, &s.random)] {
        for &n in counts {
            let _ = writeln!(
                o,
                "$ sudo ./flashbench {dev} --open-au --erasesize={} --blocksize={}{} --open-au-nr={n}",
                s.erasesize,
                s.blocksize,
                if random { " --random" } else { "" }
            );
            for (c, r) in chunks.iter().zip(open_au(t, s.erasesize, &chunks, n, random)) {
                let _ = writeln!(o, "{} {} ", format_bytes(*c), format_rate(r));
            }
        }
    }
    if s.find_fat {
        let _ = writeln!(
            o,
            "$ sudo ./flashbench {dev} --find-fat --erasesize={} --blocksize={}",
            s.erasesize, s.blocksize
        );
        for (c, rates) in chunks.iter().zip(find_fat(t, s.erasesize, &chunks, 6)) {
            let cells: Vec<String> = rates.iter().map(|&r| format!("{} ", format_rate(r))).collect();
            let _ = writeln!(o, "{} {}", format_bytes(*c), cells.concat());
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_flashbench_prints_them() {
        assert_eq!(format_ns(735_000), "735µs");
        assert_eq!(format_ns(1_080_000), "1.08ms");
        assert_eq!(format_ns(5_850), "5.85µs");
        assert_eq!(format_ns(999_600), "1e+03µ", "C's %.3g, cut by the buffer");
        assert_eq!(format_ns(-412_331), "-412331", "flashbench issue #16: no unit");
        assert_eq!(format_ns(-49_389), "-49389n");
        assert_eq!(format_bytes(4 << 20), "4MiB   ");
        assert_eq!(format_bytes(3 << 19), "1.5MiB ");
        assert_eq!(format_rate(912_000.0), "912K/s ");
        assert_eq!(format_rate(8_790_000.0), "8.79M/s");
        assert_eq!(c_g(0.0001234, 3), "0.000123");
        assert_eq!(c_g(12345.0, 3), "1.23e+04");
    }
}
