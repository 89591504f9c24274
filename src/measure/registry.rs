//! The contract of a measuring test, and the macro that makes the one
//! table of them. Each test lives in its own folder with everything about
//! it: its measurement (a [`Test`](super::Test)), its command-line
//! arguments and its sequence of steps (its [`Steps`]), and how it shows (a
//! [`Registered`] entry: text, summary line, report figures, comparable
//! figures). The table, in measure's own file beside its `pub mod` lines,
//! turns those into the typed results every run document carries
//! (`Results`, one field per test, keyed by the test's own name), the
//! `TestCommand` subcommands the CLI offers, and the loops the formats, the
//! report and `results compare` run over every test. Adding a test is its
//! folder plus one line in that table.
//!
//! Why the table is not in this file: it names every test's folder, and
//! every test names the results it is recorded in, so this file and the
//! tests' folders would use each other (the layers test counts a folder as
//! one module and fails on any cycle). In measure's own file the table
//! belongs to the folder that holds the tests, which its parts may use;
//! this file keeps only what the tests use, and uses none of them.
//!
//! A test's steps run in a [`Session`]: the runner above provides it
//! (opening the target, consent, journals, signals, the document and the
//! store are its business); nothing here knows the runner.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::metrics::Metric;
use super::note::NoteKind;
use super::{MeasureError, Medium, Results, Test};
use crate::svg::Figure;
use crate::targets::TargetDescription;

/// A result that may have been produced, said not to have been (null: probe
/// skipped the step), or never mentioned (absent from the JSON).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Slot<T> {
    #[default]
    Absent,
    Null,
    Value(T),
}

impl<T> Slot<T> {
    pub fn get(&self) -> Option<&T> {
        match self {
            Slot::Value(v) => Some(v),
            Slot::Absent | Slot::Null => None,
        }
    }

    pub fn get_mut(&mut self) -> Option<&mut T> {
        match self {
            Slot::Value(v) => Some(v),
            Slot::Absent | Slot::Null => None,
        }
    }

    pub fn set(&mut self, v: T) {
        *self = Slot::Value(v);
    }

    /// Say in the document that this did not run (JSON `null`), unless it did.
    pub fn mark_not_run(&mut self) {
        if !matches!(self, Slot::Value(_)) {
            *self = Slot::Null;
        }
    }

    pub fn is_absent(&self) -> bool {
        matches!(self, Slot::Absent)
    }
}

impl<T> From<Option<T>> for Slot<T> {
    fn from(o: Option<T>) -> Self {
        match o {
            Some(v) => Slot::Value(v),
            None => Slot::Null,
        }
    }
}

impl<T: Serialize> Serialize for Slot<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Slot<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Option::<T>::deserialize(d)?.into())
    }
}

/// The runner, as a test's sequence of steps sees it.
pub trait Session {
    /// The runner's own error (its context: which path, which command).
    type Error: From<MeasureError>;
    fn description(&self) -> &TargetDescription;
    /// A number of this run's own, never another's: what capacity tags
    /// its blocks with, so a block an earlier run left is not taken for
    /// this one's.
    fn nonce(&self) -> u64;
    /// Whether flash can show through the target at all.
    fn medium(&self) -> Medium;
    /// What the card and the kernel say the erase block is (for align).
    fn references(&self) -> Vec<(String, u64)>;
    /// A real device or file (not a simulated card).
    fn is_real(&self) -> bool;
    /// The engine asked for: psync runs every request alone.
    fn psync_only(&self) -> bool;
    /// Whether reads return what was written: false for a simulated card
    /// that keeps timing alone (`keep_data=false`), where no check of
    /// data can say anything.
    fn keeps_data(&self) -> bool;
    /// Device time the run has spent so far, in ns (a sequence of steps
    /// keeps to its budget with it).
    fn device_ns(&self) -> u64;
    /// Device-ns a writing step may take (`--budget`).
    fn budget_ns(&self) -> u64;
    /// Run one test (its plan checked first) and record its result.
    fn run<T: Test>(&mut self, test: &T) -> Result<T::Output, Self::Error>;
    /// Record what a sequence composes (capacity's verdict from its
    /// stages), and hand it on as a test's result is.
    fn update(&mut self, f: impl FnOnce(&mut Results));
    /// A note in the document (and on stderr when `say`).
    fn note(&mut self, kind: NoteKind, message: String, hint: Option<&str>, say: bool);
}

/// How one test shows, in its own folder's `show.rs`.
pub trait Registered {
    /// The subcommand that runs it, as the run document's `command` names
    /// it (`open-au`).
    const COMMAND: &'static str;
    type Output: Serialize + DeserializeOwned + Clone + std::fmt::Debug + PartialEq + Settle;
    /// Its result as its command prints it (`device_s`: the run's device
    /// time).
    fn text(r: &Self::Output, device_s: f64, o: &mut String);
    /// Its lines of probe's one-screen summary, `(label, value)`, where it
    /// ran; it may read other tests' results too (the erase block is
    /// align's and au's).
    fn summary(_r: &Self::Output, _all: &Results) -> Vec<(crate::measure::topic::Topic, String)> {
        Vec::new()
    }
    /// Its plots and notes in the HTML report.
    fn figures(_r: &Self::Output) -> Vec<Figure> {
        Vec::new()
    }
    /// The figures `results compare` and the report set side by side,
    /// where it ran; it may read other tests' results too.
    fn metrics(_r: &Self::Output, _all: &Results) -> Vec<Metric> {
        Vec::new()
    }
    /// Its points as CSV, where that means something (scatter).
    fn csv(_r: &Self::Output) -> Option<String> {
        None
    }
}

/// A result that derives what it may lack from what it holds (a verdict
/// refused, a short sample): the test does it as it ends, and every
/// document read back has it done again, so runs stored by an older
/// flashlab show as this one would have shown them. The default: nothing
/// to derive.
pub trait Settle {
    fn settle(&mut self) {}
}

/// Where a test's arguments say it runs (the target, the engine, the
/// store) and what the user allowed a writing test to do. Made by
/// [`arguments!`] for each line of the table, from the `common` and `write`
/// groups every test's `Args` flattens.
pub trait Arguments {
    fn common(&self) -> &crate::args::Common;
    /// None: the test only reads.
    fn consent(&self) -> Option<&crate::args::WriteArgs>;
}

/// `arguments!(Args, reads)` or `arguments!(Args, writes)`, as the
/// table says the test does: the [`Arguments`] of a test's `Args`, from
/// its `common` and (writing) `write` fields.
macro_rules! arguments {
    ($args:ty, reads) => {
        impl $crate::measure::registry::Arguments for $args {
            fn common(&self) -> &$crate::args::Common {
                &self.common
            }
            fn consent(&self) -> Option<&$crate::args::WriteArgs> {
                None
            }
        }
    };
    ($args:ty, writes) => {
        impl $crate::measure::registry::Arguments for $args {
            fn common(&self) -> &$crate::args::Common {
                &self.common
            }
            fn consent(&self) -> Option<&$crate::args::WriteArgs> {
                Some(&self.write)
            }
        }
    };
}

pub(crate) use arguments;

/// A test command's sequence of steps, run in whatever the runner
/// provides (its arguments, clap's, are the type it is implemented for).
pub trait Steps: Arguments {
    fn run<S: Session>(&self, s: &mut S) -> Result<(), S::Error>;
}

/// The table's expansion, in the module that invokes it: `self::$module`
/// is that module's child, every other name is spelt from the crate root.
macro_rules! registry {
    ($( $field:ident : $module:ident :: $args:ident as $variant:ident, $access:ident );* $(;)?) => {
        $( $crate::measure::registry::arguments!(self::$module::$args, $access); )*


        /// Every test's result, typed, one field per test under the test's
        /// own key: what the run document carries at its top level.
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct Results {
            $(
                #[serde(default, skip_serializing_if = "crate::measure::registry::Slot::is_absent")]
                pub $field: $crate::measure::registry::Slot<<self::$module::Presenter as $crate::measure::registry::Registered>::Output>,
            )*
        }

        /// The measuring tests' subcommands.
        #[derive(Debug, clap::Subcommand)]
        pub enum TestCommand {
            $( $variant(self::$module::$args), )*
        }

        /// A measuring test by name alone: what a run document says made
        /// it, and which result its text and CSV show.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum TestName {
            $( $variant, )*
        }

        impl TestName {
            /// Every test, in the table's order.
            pub const ALL: &[TestName] = &[$( TestName::$variant ),*];

            /// The command's word, as the run document's `command` says it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => <self::$module::Presenter as $crate::measure::registry::Registered>::COMMAND, )*
                }
            }

            /// The test whose command is `word`.
            pub fn parse(word: &str) -> Option<TestName> {
                Self::ALL.iter().copied().find(|t| t.as_str() == word)
            }
        }

        impl TestCommand {
            /// Which test the command runs.
            pub fn test_name(&self) -> TestName {
                match self {
                    $( Self::$variant(_) => TestName::$variant, )*
                }
            }

            fn command(&self) -> &dyn $crate::measure::registry::Arguments {
                match self {
                    $( Self::$variant(a) => a, )*
                }
            }

            pub fn common(&self) -> &crate::args::Common {
                self.command().common()
            }

            pub fn consent(&self) -> Option<&crate::args::WriteArgs> {
                self.command().consent()
            }

            pub fn run<S: $crate::measure::registry::Session>(&self, s: &mut S) -> Result<(), S::Error> {
                match self {
                    $( Self::$variant(a) => $crate::measure::registry::Steps::run(a, s), )*
                }
            }
        }

        impl Results {
            /// The result of `test`, as its command prints it; false when
            /// the result is missing.
            pub fn text(&self, test: TestName, device_s: f64, o: &mut String) -> bool {
                match test {
                    $(
                        TestName::$variant => match self.$field.get() {
                            Some(r) => {
                                <self::$module::Presenter as $crate::measure::registry::Registered>::text(r, device_s, o);
                                true
                            }
                            None => false,
                        },
                    )*
                }
            }

            /// Probe's summary lines, test by test in the table's order.
            pub fn summary(&self) -> Vec<($crate::measure::topic::Topic, String)> {
                let mut out = Vec::new();
                $(
                    if let Some(r) = self.$field.get() {
                        out.extend(<self::$module::Presenter as $crate::measure::registry::Registered>::summary(r, self));
                    }
                )*
                out
            }

            /// Every figure the results allow, in the table's order.
            pub fn figures(&self) -> Vec<$crate::svg::Figure> {
                let mut out = Vec::new();
                $(
                    if let Some(r) = self.$field.get() {
                        out.extend(<self::$module::Presenter as $crate::measure::registry::Registered>::figures(r));
                    }
                )*
                out
            }

            /// The comparable figures, in the table's order.
            pub fn metrics(&self) -> Vec<$crate::measure::metrics::Metric> {
                let mut out = Vec::new();
                $(
                    if let Some(r) = self.$field.get() {
                        out.extend(<self::$module::Presenter as $crate::measure::registry::Registered>::metrics(r, self));
                    }
                )*
                out
            }

            /// Every result settled as its test settles it (see
            /// [`Settle`]): for documents read back.
            pub fn settle(&mut self) {
                $(
                    if let Some(r) = self.$field.get_mut() {
                        $crate::measure::registry::Settle::settle(r);
                    }
                )*
            }

            /// `test`'s result as CSV, where it has one.
            pub fn csv(&self, test: TestName) -> Option<String> {
                match test {
                    $(
                        TestName::$variant => self.$field.get().and_then(<self::$module::Presenter as $crate::measure::registry::Registered>::csv),
                    )*
                }
            }
        }
    };
}

pub(super) use registry;
