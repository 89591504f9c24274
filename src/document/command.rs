//! What made a run document: its `command`, typed. Text output, the store
//! and `results` dispatch on this, never on the word, so renaming a command
//! cannot silently empty its output.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::measure::TestName;

/// Every command a document can come from, and a command line clap refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandName {
    /// A measuring test (align, bench, ...).
    Test(TestName),
    Probe,
    Info,
    ImportFlashbench,
    Life,
    Batch,
    Trace,
    Emulate,
    Restore,
    Report,
    ResultsList,
    ResultsShow,
    ResultsCompare,
    ResultsExport,
    ResultsImport,
    ResultsUpload,
    SimList,
    SimShow,
    SimReproduce,
    Decode,
    DebugWritePattern,
    Completions,
    Man,
    /// A word that names no command: a command line clap refused, or a
    /// document from a later flashlab. Shown as it came, never run.
    Unknown(String),
}

/// The commands that are not tests.
const FIXED: &[CommandName] = &[
    CommandName::Probe,
    CommandName::Info,
    CommandName::ImportFlashbench,
    CommandName::Life,
    CommandName::Batch,
    CommandName::Trace,
    CommandName::Emulate,
    CommandName::Restore,
    CommandName::Report,
    CommandName::ResultsList,
    CommandName::ResultsShow,
    CommandName::ResultsCompare,
    CommandName::ResultsExport,
    CommandName::ResultsImport,
    CommandName::ResultsUpload,
    CommandName::SimList,
    CommandName::SimShow,
    CommandName::SimReproduce,
    CommandName::Decode,
    CommandName::DebugWritePattern,
    CommandName::Completions,
    CommandName::Man,
];

impl CommandName {
    /// The command's words, as typed and as the JSON says them.
    pub fn as_str(&self) -> &str {
        match self {
            CommandName::Test(t) => t.as_str(),
            CommandName::Probe => "probe",
            CommandName::Info => "info",
            CommandName::ImportFlashbench => "import flashbench",
            CommandName::Life => "life",
            CommandName::Batch => "batch",
            CommandName::Trace => "trace",
            CommandName::Emulate => "emulate",
            CommandName::Restore => "restore",
            CommandName::Report => "report",
            CommandName::ResultsList => "results list",
            CommandName::ResultsShow => "results show",
            CommandName::ResultsCompare => "results compare",
            CommandName::ResultsExport => "results export",
            CommandName::ResultsImport => "results import",
            CommandName::ResultsUpload => "results upload",
            CommandName::SimList => "sim list",
            CommandName::SimShow => "sim show",
            CommandName::SimReproduce => "sim reproduce",
            CommandName::Decode => "decode",
            CommandName::DebugWritePattern => "debug write-pattern",
            CommandName::Completions => "completions",
            CommandName::Man => "man",
            CommandName::Unknown(w) => w,
        }
    }

    /// The command `words` name; Unknown where none.
    pub fn parse(words: &str) -> CommandName {
        if let Some(t) = TestName::parse(words) {
            return CommandName::Test(t);
        }
        FIXED
            .iter()
            .find(|c| c.as_str() == words)
            .cloned()
            .unwrap_or_else(|| CommandName::Unknown(words.to_string()))
    }

    /// The commands whose runs are stored, compared and drawn: every
    /// test's, `info`, `probe`, imported runs, and `life`'s answers.
    pub fn is_measuring(&self) -> bool {
        matches!(
            self,
            CommandName::Test(_)
                | CommandName::Info
                | CommandName::Probe
                | CommandName::ImportFlashbench
                | CommandName::Life
                | CommandName::Batch
        )
    }
}

impl std::fmt::Display for CommandName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for CommandName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CommandName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(CommandName::parse(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_reads_back_as_itself_and_no_two_share_a_word() {
        let mut all: Vec<CommandName> = FIXED.to_vec();
        all.extend(TestName::ALL.iter().map(|&t| CommandName::Test(t)));
        let mut words: Vec<&str> = all.iter().map(CommandName::as_str).collect();
        for c in &all {
            let json = serde_json::to_string(c).unwrap();
            assert_eq!(serde_json::from_str::<CommandName>(&json).unwrap(), *c, "{json}");
            assert!(
                !matches!(CommandName::parse(c.as_str()), CommandName::Unknown(_)),
                "{c}"
            );
        }
        words.sort();
        let n = words.len();
        words.dedup();
        assert_eq!(words.len(), n, "a word names two commands");
        assert_eq!(CommandName::parse("open-au"), CommandName::Test(TestName::OpenAu));
        assert_eq!(CommandName::parse("proeb"), CommandName::Unknown("proeb".into()));
        assert!(!CommandName::parse("proeb").is_measuring());
        assert!(CommandName::parse("import flashbench").is_measuring());
    }
}
