//! Binary sizes: the one parser and the one formatter every command uses.
//!
//! flashlab, like flashbench and the SD specification, counts storage in powers of
//! two: `4k` is 4096 bytes, `1M`, `1MiB` and `1m` are all 1048576.

use std::fmt;

/// Why a size argument was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("empty size")]
    Empty,
    #[error("'{0}' is not a size (expected a number with an optional suffix k, M, G, T, P, e.g. 4k, 16KiB, 4M)")]
    Malformed(String),
    #[error("'{0}' is too large")]
    Overflow(String),
}

/// Parse a binary size: plain bytes (`4096`), or a number with a suffix
/// `k`/`K`/`KiB`/`KB`, `M`, `G`, `T`, `P` (all powers of 1024), optionally `B`.
/// Hex (`0x1000`) is accepted for people pasting offsets.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(SizeError::Empty);
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| SizeError::Malformed(text.to_string()));
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, suffix) = s.split_at(split);
    if digits.is_empty() {
        return Err(SizeError::Malformed(text.to_string()));
    }
    let value: u64 = digits.parse().map_err(|_| SizeError::Overflow(text.to_string()))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(SizeError::Malformed(text.to_string())),
    };
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| SizeError::Overflow(text.to_string()))
}

/// A byte count shown in IEC units (`3.64 GiB`, `16 KiB`, `512 B`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iec(pub u64);

impl fmt::Display for Iec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
        let mut unit = 0;
        while unit + 1 < UNITS.len() && self.0 >= 1u64 << (10 * (unit + 1)) {
            unit += 1;
        }
        if unit == 0 {
            return write!(f, "{} B", self.0);
        }
        let scale = 1u64 << (10 * unit);
        if self.0.is_multiple_of(scale) {
            write!(f, "{} {}", self.0 / scale, UNITS[unit])
        } else {
            // A size just off a whole unit is marked: 4194000 bytes as
            // "4.00 MiB" read as 4 MiB exactly.
            let shown = format!("{:.2}", self.0 as f64 / scale as f64);
            let near = if shown.ends_with(".00") { "~" } else { "" };
            write!(f, "{near}{shown} {}", UNITS[unit])
        }
    }
}

/// A rate shown in decimal MB/s, the unit of SD speed classes and flashbench.
pub fn mb_per_s(bytes_per_sec: f64) -> String {
    format!("{:.2} MB/s", bytes_per_sec / 1e6)
}

/// A duration as fio's --runtime takes it: a number with an optional unit
/// (`us`, `ms`, `s`, `m`, `h`; plain numbers are seconds, as in fio), in
/// nanoseconds; at most a day.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (10s, 500ms, 2m)"))?;
    let scale = match unit.trim() {
        "us" => 1e3,
        "ms" => 1e6,
        "" | "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        other => return Err(format!("unknown unit '{other}' in '{text}' (us, ms, s, m or h)")),
    };
    let ns = value * scale;
    if !(1.0..=86_400e9).contains(&ns) {
        return Err(format!("'{text}' must be between 1 ns and a day"));
    }
    Ok(ns as u64)
}

/// A duration in nanoseconds shown with a readable unit, chosen by its
/// magnitude (a negative difference reads in the unit its size asks).
pub fn duration_ns(ns: f64) -> String {
    in_unit(ns, unit_for(ns))
}

/// Durations that stand together (a table's column) in one unit, the one
/// the largest magnitude among them asks: "-4.5 µs" beside "34.5 µs", not
/// "-4459 ns" beside it.
pub fn durations_ns(values: &[f64]) -> Vec<String> {
    let largest = values.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    let unit = unit_for(largest);
    values.iter().map(|v| in_unit(*v, unit)).collect()
}

/// The unit (its size in ns, its name, its decimals) for a magnitude.
fn unit_for(ns: f64) -> (f64, &'static str, usize) {
    match ns.abs() {
        a if a >= 1e9 => (1e9, "s", 2),
        a if a >= 1e6 => (1e6, "ms", 2),
        a if a >= 1e3 => (1e3, "µs", 1),
        _ => (1.0, "ns", 0),
    }
}

fn in_unit(ns: f64, (scale, name, decimals): (f64, &str, usize)) -> String {
    format!("{:.*} {name}", decimals, ns / scale)
}

/// A year of the model's clock, in nanoseconds: 365 days. What the
/// bounds on a trace's span and a card's whole write count in.
pub const YEAR_NS: u64 = 365 * 86_400 * 1_000_000_000;

/// A span of years as people say it: hours under two days, days under
/// two months, months under two years (a card's life, from `life`).
pub fn years(y: f64) -> String {
    let days = y * 365.25;
    if days < 2.0 {
        count((days * 24.0).round() as u64, "hour", "hours")
    } else if days < 60.0 {
        format!("{days:.0} days")
    } else if y < 2.0 {
        format!("{:.0} months", y * 12.0)
    } else if y < 100.0 {
        format!("{y:.1} years")
    } else {
        format!("{y:.0} years")
    }
}

/// "1 AU", "3 AUs": a count with its noun, singular or plural.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// [`count`] in at most 6 characters before the noun, for a line that
/// must keep its width as counts grow: "9999 reads", "40.1k reads",
/// "12.3M reads" (decimal thousands, as a counter is read).
pub fn count_short(n: u64, one: &str, many: &str) -> String {
    let noun = if n == 1 { one } else { many };
    match n {
        0..=9_999 => format!("{n} {noun}"),
        10_000..=999_949 => format!("{:.1}k {noun}", n as f64 / 1e3),
        999_950..=999_949_999 => format!("{:.1}M {noun}", n as f64 / 1e6),
        _ => format!("{:.1}G {noun}", n as f64 / 1e9),
    }
}

/// A Unix time as "2026-11-23 14:05 UTC", for people (JSON keeps the
/// seconds). Days to a civil date by Howard Hinnant's `civil_from_days`
/// (proleptic Gregorian calendar), so no date crate is needed for one line.
pub fn date_time(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", secs / 3600, secs % 3600 / 60)
}

/// `size = 2^exponent × odd`: the factorisation that 004_033f2d3f80bf6aca.txt's author
/// does with `factor` to guess which power-of-two erase blocks can tile the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PowerOfTwoSplit {
    pub exponent: u32,
    pub odd_part: u64,
    /// The largest power of two dividing the size, in bytes.
    pub largest_power_of_two_bytes: u64,
}

/// Factor a size into a power of two and an odd part; `None` for zero.
pub fn split_power_of_two(size: u64) -> Option<PowerOfTwoSplit> {
    if size == 0 {
        return None;
    }
    let exponent = size.trailing_zeros();
    Some(PowerOfTwoSplit {
        exponent,
        odd_part: size >> exponent,
        largest_power_of_two_bytes: 1u64 << exponent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_counts_keep_their_width() {
        let shown: Vec<String> = [1, 9_999, 10_000, 40_127, 999_949, 999_950, 12_345_678, 5_000_000_000]
            .iter()
            .map(|&n| count_short(n, "read", "reads"))
            .collect();
        assert_eq!(
            shown,
            [
                "1 read",
                "9999 reads",
                "10.0k reads",
                "40.1k reads",
                "999.9k reads",
                "1.0M reads",
                "12.3M reads",
                "5.0G reads"
            ]
        );
    }

    #[test]
    fn a_span_of_years_reads_as_people_say_it() {
        let day = 1.0 / 365.25;
        assert_eq!(years(day / 24.0), "1 hour");
        assert_eq!(years(1.5 * day), "36 hours");
        assert_eq!(years(45.0 * day), "45 days");
        assert_eq!(years(1.5), "18 months");
        assert_eq!(years(11.74), "11.7 years");
        assert_eq!(years(250.0), "250 years");
    }

    #[test]
    fn dates_read_as_dates() {
        assert_eq!(date_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(date_time(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(date_time(1_795_442_912), "2026-11-23 14:08 UTC");
    }

    #[test]
    fn durations_parse_as_fio_takes_them() {
        let ns = [
            ("10", 10_000_000_000),
            ("10s", 10_000_000_000),
            ("500ms", 500_000_000),
            ("2m", 120_000_000_000),
            ("1.5s", 1_500_000_000),
        ];
        for (text, ns) in ns {
            assert_eq!(parse_duration_ns(text), Ok(ns), "{text}");
        }
        for bad in ["0", "2d", "1e9", "25h", ""] {
            assert!(parse_duration_ns(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_column_of_durations_takes_one_unit_from_its_largest() {
        assert_eq!(
            durations_ns(&[-4459.0, 34_500.0, 0.0, 636_580.0]),
            ["-4.5 µs", "34.5 µs", "0.0 µs", "636.6 µs"]
        );
        assert_eq!(durations_ns(&[-2_500_000.0, 120.0]), ["-2.50 ms", "0.00 ms"]);
        assert_eq!(durations_ns(&[12.0, -480.0]), ["12 ns", "-480 ns"]);
        assert_eq!(durations_ns(&[]), Vec::<String>::new());
        assert_eq!(duration_ns(-4459.0), "-4.5 µs");
        assert_eq!(duration_ns(1_680_000.0), "1.68 ms");
    }

    #[test]
    fn binary_suffixes() {
        let bytes = [
            ("4096", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("16KiB", 16384),
            ("1M", 1 << 20),
            ("1MiB", 1 << 20),
            ("3m", 3 << 20),
            ("2G", 2 << 30),
            ("1T", 1 << 40),
            ("512B", 512),
            ("0x1000", 4096),
            (" 8k ", 8192),
        ];
        for (text, bytes) in bytes {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert!(matches!(parse_size("k"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_size("4x"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_size("-4k"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_size("1.5M"), Err(SizeError::Malformed(_))));
        assert!(matches!(
            parse_size("99999999999999999999"),
            Err(SizeError::Overflow(_))
        ));
        assert!(matches!(parse_size("17000000P"), Err(SizeError::Overflow(_))));
    }

    #[test]
    fn iec_display() {
        assert_eq!(Iec(512).to_string(), "512 B");
        assert_eq!(Iec(4096).to_string(), "4 KiB");
        assert_eq!(Iec(4 << 20).to_string(), "4 MiB");
        assert_eq!(Iec(3_904_897_024).to_string(), "3.64 GiB");
        assert_eq!(Iec(1536).to_string(), "1.50 KiB");
    }

    #[test]
    fn kingston_capacity_factorisation() {
        // 004_033f2d3f80bf6aca.txt: `factor 3904897024` = 2^22 x 7 x 7 x 19.
        let split = split_power_of_two(3_904_897_024).unwrap();
        assert_eq!(split.exponent, 22);
        assert_eq!(split.odd_part, 7 * 7 * 19);
        assert_eq!(split.largest_power_of_two_bytes, 4 << 20);
        assert_eq!(split_power_of_two(0), None);
    }

    proptest::proptest! {
        #[test]
        fn parse_roundtrips_plain_and_k(n in 0u64..(1 << 40)) {
            proptest::prop_assert_eq!(parse_size(&n.to_string()), Ok(n));
            proptest::prop_assert_eq!(parse_size(&format!("{n}k")), Ok(n * 1024));
        }

        #[test]
        fn parse_never_panics(s in "\\PC*") {
            let _ = parse_size(&s);
        }
    }
}
