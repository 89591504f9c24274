//! SD class verdicts from bench's figures, "A1-style": the thresholds of the
//! SD Association's classes (SD Physical Layer Simplified Specification
//! 6.00, sections 4.13 "Speed Class", 4.13.1.2 UHS Speed Class, 4.13.2.4
//! Video Speed Class, and 4.16 Application Performance Class), met or not
//! by what bench measured here. The Association's own conditions (a
//! preconditioned card, its recording-unit write sequence, and for A2 a host
//! with command queueing and cache) are not reproduced, so a verdict says
//! how the card did in this run, not whether it is certified.
//!
//! A class is decided only when every figure it needs was measured; a run
//! without random 4 KiB tests says nothing about A1.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::result::{BenchTest, Rw};

/// An SD class, by the name the specification gives it (see the module
/// doc), in its order: speed, UHS speed, video speed, application. The
/// run document's keys are these names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SdClass {
    C2,
    C4,
    C6,
    C10,
    U1,
    U3,
    V6,
    V10,
    V30,
    V60,
    V90,
    A1,
    A2,
}

impl SdClass {
    pub fn as_str(self) -> &'static str {
        match self {
            SdClass::C2 => "C2",
            SdClass::C4 => "C4",
            SdClass::C6 => "C6",
            SdClass::C10 => "C10",
            SdClass::U1 => "U1",
            SdClass::U3 => "U3",
            SdClass::V6 => "V6",
            SdClass::V10 => "V10",
            SdClass::V30 => "V30",
            SdClass::V60 => "V60",
            SdClass::V90 => "V90",
            SdClass::A1 => "A1",
            SdClass::A2 => "A2",
        }
    }

    /// The class a name gives ("c10", "V30"), any case.
    pub fn parse(text: &str) -> Option<SdClass> {
        names().find(|c| c.as_str().eq_ignore_ascii_case(text.trim()))
    }

    /// The classes a card's SSR says it has: speed, UHS speed, video
    /// speed and application performance class (SD spec 4.10.2).
    pub fn claimed_by(ssr: &crate::registers::ssr::Ssr) -> Vec<SdClass> {
        let words = [
            ssr.speed_class.filter(|&n| n > 0).map(|n| format!("C{n}")),
            (ssr.uhs_speed_grade > 0).then(|| format!("U{}", ssr.uhs_speed_grade)),
            (ssr.video_speed_class > 0).then(|| format!("V{}", ssr.video_speed_class)),
            ssr.app_perf_class.clone(),
        ];
        words.into_iter().flatten().filter_map(|w| SdClass::parse(&w)).collect()
    }

    /// The family a class belongs to: the best met and the first missed of
    /// each are what bench shows.
    pub fn family(self) -> Family {
        match self {
            SdClass::C2 | SdClass::C4 | SdClass::C6 | SdClass::C10 => Family::Speed,
            SdClass::U1 | SdClass::U3 => Family::UhsSpeed,
            SdClass::V6 | SdClass::V10 | SdClass::V30 | SdClass::V60 | SdClass::V90 => Family::VideoSpeed,
            SdClass::A1 | SdClass::A2 => Family::Application,
        }
    }
}

impl std::fmt::Display for SdClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The specification's groups of classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Speed,
    UhsSpeed,
    VideoSpeed,
    Application,
}

/// What a class requirement measures. The document keeps the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Need {
    #[serde(rename = "random 4 KiB read IOPS")]
    RandomReadIops,
    #[serde(rename = "random 4 KiB write IOPS")]
    RandomWriteIops,
    #[serde(rename = "sustained sequential write MB/s")]
    SustainedWriteMbS,
}

impl Need {
    /// In IOPS, not MB/s.
    pub fn is_iops(self) -> bool {
        matches!(self, Need::RandomReadIops | Need::RandomWriteIops)
    }
}

/// One requirement of a class, and what this run measured for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub what: Need,
    pub needed: f64,
    pub measured: f64,
    /// The bench test it comes from.
    pub test: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassFigures {
    /// "A1-style": measured here, not certified.
    pub label: String,
    pub figures: Vec<Figure>,
}

/// What a class needs: random 4 KiB read and write IOPS (application
/// classes) and sustained sequential write in MB/s.
struct Needs {
    name: SdClass,
    read_iops: Option<f64>,
    write_iops: Option<f64>,
    write_mb_s: f64,
}

/// The classes, from the specification's tables (see the module doc).
const CLASSES: &[Needs] = &[
    Needs {
        name: SdClass::C2,
        read_iops: None,
        write_iops: None,
        write_mb_s: 2.0,
    },
    Needs {
        name: SdClass::C4,
        read_iops: None,
        write_iops: None,
        write_mb_s: 4.0,
    },
    Needs {
        name: SdClass::C6,
        read_iops: None,
        write_iops: None,
        write_mb_s: 6.0,
    },
    Needs {
        name: SdClass::C10,
        read_iops: None,
        write_iops: None,
        write_mb_s: 10.0,
    },
    Needs {
        name: SdClass::U1,
        read_iops: None,
        write_iops: None,
        write_mb_s: 10.0,
    },
    Needs {
        name: SdClass::U3,
        read_iops: None,
        write_iops: None,
        write_mb_s: 30.0,
    },
    Needs {
        name: SdClass::V6,
        read_iops: None,
        write_iops: None,
        write_mb_s: 6.0,
    },
    Needs {
        name: SdClass::V10,
        read_iops: None,
        write_iops: None,
        write_mb_s: 10.0,
    },
    Needs {
        name: SdClass::V30,
        read_iops: None,
        write_iops: None,
        write_mb_s: 30.0,
    },
    Needs {
        name: SdClass::V60,
        read_iops: None,
        write_iops: None,
        write_mb_s: 60.0,
    },
    Needs {
        name: SdClass::V90,
        read_iops: None,
        write_iops: None,
        write_mb_s: 90.0,
    },
    Needs {
        name: SdClass::A1,
        read_iops: Some(1500.0),
        write_iops: Some(500.0),
        write_mb_s: 10.0,
    },
    Needs {
        name: SdClass::A2,
        read_iops: Some(4000.0),
        write_iops: Some(2000.0),
        write_mb_s: 10.0,
    },
];

/// Points of a sequential write's timeline below which its slowest point is
/// not a sustained figure, and its mean stands instead.
const SUSTAINED_POINTS: usize = 5;

/// The sustained sequential write (MB/s) and the test it comes from.
struct Sustained {
    /// Its slowest point: the figure classes are judged by.
    slowest: f64,
    /// Its next slowest point: where one point alone is slow (one stalled
    /// request of a few in it), a class between the two is decided by that
    /// request, and another run of the same card decides it the other way.
    next: f64,
    test: String,
}

/// The sustained sequential write: of the sequential write tests, the one
/// that moved the most bytes, at its slowest twentieth (a card that slows
/// once its cache fills is judged by the slow part, as the speed classes'
/// minimum performance is), with the twentieth after it.
fn sustained_write(tests: &[BenchTest]) -> Option<Sustained> {
    let t = tests
        .iter()
        .filter(|t| t.rw == Rw::Write && !t.short_sample)
        .max_by_key(|t| t.requests * t.block_size)?;
    let mut points: Vec<f64> = t
        .timeline
        .iter()
        .map(|p| p.bytes_per_sec)
        .filter(|v| v.is_finite())
        .collect();
    points.sort_by(f64::total_cmp);
    let (slowest, next) = if points.len() >= SUSTAINED_POINTS {
        (points[0], points[1])
    } else {
        (t.bytes_per_sec, t.bytes_per_sec)
    };
    Some(Sustained {
        slowest: slowest / 1e6,
        next: next / 1e6,
        test: t.name.clone(),
    })
}

/// Classes one slow point of the sustained write decides: missed at its
/// slowest point, met at the next slowest. Their verdict would be a single
/// request's, so none is given.
#[derive(Debug, Clone, PartialEq)]
pub struct OnePoint {
    pub classes: Vec<SdClass>,
    /// The slowest point and the next, MB/s.
    pub slowest: f64,
    pub next: f64,
    pub test: String,
}

/// The classes one slow point decides (see [`OnePoint`]), of those the
/// run has the other figures for (a short sample among them is said
/// apart, by [`unjudged`]); None where none.
pub fn one_point(tests: &[BenchTest]) -> Option<OnePoint> {
    let s = sustained_write(tests)?;
    let ran = |rw: Rw| tests.iter().any(|t| t.rw == rw && t.block_size == 4096);
    let classes: Vec<SdClass> = CLASSES
        .iter()
        .filter(|c| c.read_iops.is_none() || ran(Rw::RandRead))
        .filter(|c| c.write_iops.is_none() || ran(Rw::RandWrite))
        .filter(|c| s.slowest < c.write_mb_s && s.next >= c.write_mb_s)
        .map(|c| c.name)
        .collect();
    (!classes.is_empty()).then_some(OnePoint {
        classes,
        slowest: s.slowest,
        next: s.next,
        test: s.test,
    })
}

/// The best 4 KiB random IOPS of one kind (any queue depth: A2 counts on
/// the host queueing).
fn random_4k(tests: &[BenchTest], rw: Rw) -> Option<(f64, String)> {
    tests
        .iter()
        .filter(|t| t.rw == rw && t.block_size == 4096 && !t.short_sample)
        .max_by(|a, b| a.iops.total_cmp(&b.iops))
        .map(|t| (t.iops, t.name.clone()))
}

/// The classes met, per group the highest (A2 over A1, C10 over C6...).
/// bench's, beside the verdicts: its own summary line says them, and
/// probe's summary, which reads bench's results, takes them from here.
pub fn met(classes: &BTreeMap<SdClass, bool>) -> Vec<String> {
    [Family::Application, Family::Speed, Family::UhsSpeed, Family::VideoSpeed]
        .iter()
        .filter_map(|&g| {
            names()
                .filter(|c| c.family() == g)
                .rev()
                .find(|c| classes.get(c) == Some(&true))
        })
        .map(|c| c.to_string())
        .collect()
}

/// Verdicts (class name to met or not) and their figures, for every class
/// whose figures were all measured, none of them from a short sample, and
/// whose verdict no single slow point decides ([`one_point`]).
pub fn verdicts(tests: &[BenchTest]) -> (BTreeMap<SdClass, bool>, BTreeMap<SdClass, ClassFigures>) {
    let sustained = sustained_write(tests);
    let decided = |needed: f64| {
        sustained
            .as_ref()
            .is_none_or(|s| (s.slowest >= needed) == (s.next >= needed))
    };
    let write = sustained.as_ref().map(|s| (s.slowest, s.test.clone()));
    let read4k = random_4k(tests, Rw::RandRead);
    let write4k = random_4k(tests, Rw::RandWrite);
    let mut met = BTreeMap::new();
    let mut figures = BTreeMap::new();
    for c in CLASSES.iter().filter(|c| decided(c.write_mb_s)) {
        let mut f = Vec::new();
        let needs = [
            (c.read_iops, &read4k, Need::RandomReadIops),
            (c.write_iops, &write4k, Need::RandomWriteIops),
            (Some(c.write_mb_s), &write, Need::SustainedWriteMbS),
        ];
        let mut complete = true;
        for (need, got, what) in needs {
            let Some(needed) = need else { continue };
            match got {
                Some((measured, test)) => f.push(Figure {
                    what,
                    needed,
                    measured: *measured,
                    test: test.clone(),
                }),
                None => complete = false,
            }
        }
        if complete {
            met.insert(c.name, f.iter().all(|x| x.measured >= x.needed));
            figures.insert(
                c.name,
                ClassFigures {
                    label: format!("{}-style", c.name),
                    figures: f,
                },
            );
        }
    }
    (met, figures)
}

/// Classes a short sample kept from being judged: what the tests would
/// have judged without the mark, less what `judged` holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Unjudged {
    /// "C10-style", in the order of [`names`].
    pub classes: Vec<String>,
    /// The short samples those classes needed.
    pub samples: Vec<String>,
}

/// Which classes short samples kept from being judged; None where none.
pub fn unjudged(tests: &[BenchTest], judged: &BTreeMap<SdClass, bool>) -> Option<Unjudged> {
    let unmarked: Vec<BenchTest> = tests
        .iter()
        .map(|t| BenchTest {
            short_sample: false,
            ..t.clone()
        })
        .collect();
    let (would, figures) = verdicts(&unmarked);
    let lost: Vec<SdClass> = names()
        .filter(|c| would.contains_key(c) && !judged.contains_key(c))
        .collect();
    let samples: Vec<String> = tests
        .iter()
        .filter(|t| t.short_sample)
        .filter(|t| lost.iter().any(|c| figures[c].figures.iter().any(|f| f.test == t.name)))
        .map(|t| t.name.clone())
        .collect();
    (!lost.is_empty()).then(|| Unjudged {
        classes: lost.iter().map(|c| format!("{c}-style")).collect(),
        samples,
    })
}

/// Take back each class judged from a short sample (`classes` and their
/// `figures`): a run stored before the mark judged classes from whatever
/// it had, two requests included.
pub fn forget_short(
    tests: &[BenchTest],
    classes: &mut BTreeMap<SdClass, bool>,
    figures: &mut BTreeMap<SdClass, ClassFigures>,
) {
    let short = |name: &str| tests.iter().any(|t| t.short_sample && t.name == name);
    let from_short: Vec<SdClass> = figures
        .iter()
        .filter(|(_, f)| f.figures.iter().any(|x| short(&x.test)))
        .map(|(c, _)| *c)
        .collect();
    for c in from_short {
        classes.remove(&c);
        figures.remove(&c);
    }
}

/// The class names in the specification's order (speed, UHS, video,
/// application), for output.
pub fn names() -> impl DoubleEndedIterator<Item = SdClass> {
    CLASSES.iter().map(|c| c.name)
}

/// The classes that need random-write IOPS (the application classes).
pub fn with_random_writes() -> impl Iterator<Item = SdClass> {
    CLASSES.iter().filter(|c| c.write_iops.is_some()).map(|c| c.name)
}

/// What the verdicts do not reproduce, for every output that shows them.
pub const CAVEAT: &str = "measured here, not certified: the SD Association's conditions (a preconditioned card, \
     its recording-unit write sequence, and for A2 a host with command queueing and cache) are not reproduced";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::bench::result::{Latency, Point};

    fn test(rw: Rw, bs: u64, iops: f64, timeline: &[f64]) -> BenchTest {
        BenchTest {
            name: format!("{} {bs}", rw.name()),
            rw,
            pattern: String::new(),
            block_size: bs,
            queue_depth: 1,
            requests: 1000,
            iops,
            bytes_per_sec: iops * bs as f64,
            latency_ns: Latency {
                mean: 0.0,
                p50: 0,
                p90: 0,
                p99: 0,
                p999: 0,
                max: 0,
                distribution: Vec::new(),
            },
            timeline: timeline
                .iter()
                .enumerate()
                .map(|(i, &b)| Point {
                    t_s: i as f64,
                    bytes_per_sec: b,
                })
                .collect(),
            short_sample: false,
        }
    }

    #[test]
    fn a_class_is_decided_only_on_what_was_measured_and_by_the_slowest_stretch() {
        // 25 MB/s at first, 8 MB/s once a cache fills.
        let seq = test(Rw::Write, 1 << 20, 20.0, &[25e6, 25e6, 25e6, 8e6, 8e6, 8e6]);
        let (met, fig) = verdicts(std::slice::from_ref(&seq));
        assert_eq!(met.get(&SdClass::C6), Some(&true));
        assert_eq!(met.get(&SdClass::C10), Some(&false), "judged by the slow part");
        assert!(!met.contains_key(&SdClass::A1), "no random tests, no A1 verdict");
        assert_eq!(fig[&SdClass::C10].figures[0].measured, 8.0);
        assert_eq!(fig[&SdClass::C10].label, "C10-style");
        let tests = [
            seq,
            test(Rw::RandRead, 4096, 2000.0, &[]),
            test(Rw::RandWrite, 4096, 499.0, &[]),
        ];
        let (met, fig) = verdicts(&tests);
        assert_eq!(met.get(&SdClass::A1), Some(&false), "499 write IOPS is short of 500");
        assert_eq!(fig[&SdClass::A1].figures.len(), 3);
        assert_eq!(met.get(&SdClass::A2), Some(&false));
        // A short sample judges nothing: without the sequential write's
        // figure no class is decided.
        let mut tests = tests;
        tests[0].short_sample = true;
        let met = verdicts(&tests).0;
        assert!(met.is_empty());
        let lost = unjudged(&tests, &met).unwrap();
        assert_eq!(lost.samples, ["write 1048576"]);
        assert_eq!(lost.classes.len(), 13, "{:?}", lost.classes);
        assert_eq!(lost.classes[..2], ["C2-style", "C4-style"]);
        // A run stored before the mark judged them all from it: read back,
        // it judges none.
        let unmarked = tests.clone().map(|t| BenchTest {
            short_sample: false,
            ..t
        });
        let (mut old_met, mut old_fig) = verdicts(&unmarked);
        assert_eq!(old_met.len(), 13);
        forget_short(&tests, &mut old_met, &mut old_fig);
        assert!(old_met.is_empty() && old_fig.is_empty());
        // Nothing short: nothing to forget, nothing unjudged.
        tests[0].short_sample = false;
        let (mut met, mut fig) = verdicts(&tests);
        assert_eq!(unjudged(&tests, &met), None);
        forget_short(&tests, &mut met, &mut fig);
        assert_eq!(met.len(), 13);
    }

    /// One slow point (a stalled request among the few of a twentieth)
    /// decides no class it alone puts out of reach; two decide them.
    #[test]
    fn one_slow_point_decides_no_class_that_the_next_one_meets() {
        let one = test(Rw::Write, 1 << 20, 19.0, &[20e6, 20e6, 20e6, 2.4e6, 19.3e6, 20e6]);
        let (met, fig) = verdicts(std::slice::from_ref(&one));
        let said: Vec<(SdClass, bool)> = met.iter().map(|(c, m)| (*c, *m)).collect();
        use SdClass::*;
        assert_eq!(
            said,
            [(C2, true), (U3, false), (V30, false), (V60, false), (V90, false)],
            "met at 2.4 MB/s and missed at 19.3 MB/s alike"
        );
        assert_eq!(fig[&C2].figures[0].measured, 2.4);
        let p = one_point(std::slice::from_ref(&one)).unwrap();
        assert_eq!(p.classes, [C4, C6, C10, U1, V6, V10], "no random tests: no A1 to judge");
        let with_random = [
            one.clone(),
            test(Rw::RandRead, 4096, 2000.0, &[]),
            test(Rw::RandWrite, 4096, 600.0, &[]),
        ];
        assert_eq!(
            one_point(&with_random).unwrap().classes,
            [C4, C6, C10, U1, V6, V10, A1, A2]
        );
        assert_eq!((p.slowest, p.next, p.test.as_str()), (2.4, 19.3, "write 1048576"));
        // Two slow points are a slow stretch: C10 is missed.
        let two = test(Rw::Write, 1 << 20, 19.0, &[20e6, 2.4e6, 20e6, 2.6e6, 19.3e6, 20e6]);
        let met = verdicts(std::slice::from_ref(&two)).0;
        assert_eq!((met.get(&C4), met.get(&C10)), (Some(&false), Some(&false)));
        assert_eq!(one_point(std::slice::from_ref(&two)), None);
        // Under five points the mean stands, and no point decides.
        let few = test(Rw::Write, 1 << 20, 19.0, &[20e6, 2.4e6, 20e6]);
        assert_eq!(verdicts(std::slice::from_ref(&few)).0.get(&C10), Some(&true));
        assert_eq!(one_point(std::slice::from_ref(&few)), None);
    }
}
