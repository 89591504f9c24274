//! The run document puts the envelope, the runner's extras, every test's
//! result and a command's body side by side at its top level (serde's
//! flatten). serde writes a key twice if two of them share it, and a reader
//! keeps one: this checks that no two can, from the types' own field lists,
//! but for two the contract already had, where the parts never meet.

use std::cell::RefCell;

use serde::de::{self, Deserialize, Visitor};

use super::bodies::*;
use super::{Extras, RunDocument};
use crate::measure::Results;

/// A deserializer that only asks the type its field names.
struct Fields<'a>(&'a RefCell<Vec<&'static str>>);

#[derive(Debug)]
struct Done;

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names read")
    }
}

impl std::error::Error for Done {}

impl de::Error for Done {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Done
    }
}

impl<'de> de::Deserializer<'de> for Fields<'_> {
    type Error = Done;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Done> {
        Err(Done)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Done> {
        self.0.borrow_mut().extend(fields);
        Err(Done)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The keys a struct type writes (its serde field names).
fn keys<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
    let seen = RefCell::new(Vec::new());
    let _ = T::deserialize(Fields(&seen));
    let out = seen.into_inner();
    assert!(!out.is_empty(), "{} read no field names", std::any::type_name::<T>());
    out
}

#[test]
fn no_two_parts_of_the_document_share_a_top_level_key() {
    // The envelope: a document with neither extras, results nor body.
    let bare = serde_json::to_value(RunDocument::new(super::CommandName::Probe, None)).unwrap();
    let mut envelope: Vec<String> = bare.as_object().unwrap().keys().cloned().collect();
    for optional in ["target", "device_time_s", "notes", "warnings"] {
        assert!(
            !envelope.iter().any(|k| k == optional),
            "{optional} was written when empty"
        );
        envelope.push(optional.into());
    }
    let extras = keys::<Extras>();
    let results = keys::<Results>();
    let bodies: Vec<(&str, Vec<&str>)> = vec![
        ("SimList", keys::<SimList>()),
        ("SimShow", keys::<SimShow>()),
        ("Reproduced", keys::<crate::sim::reproduce::Report>()),
        ("ReproduceAll", keys::<ReproduceAll>()),
        ("Listing", keys::<Listing>()),
        ("Comparison", keys::<Comparison>()),
        ("Imported", keys::<ImportResult>()),
        ("Pending", keys::<PendingList>()),
        ("Restored", keys::<RestoredList>()),
        ("SetAside", keys::<SetAsideBody>()),
        ("Report", keys::<ReportBody>()),
        ("Pattern", keys::<PatternBody>()),
        ("Emulating", keys::<EmulatingBody>()),
    ];
    let mut owner: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    let mut claim = |key: &'static str, part: &'static str| {
        if let Some(other) = owner.insert(key, part) {
            panic!("the top-level key {key} is both {other}'s and {part}'s");
        }
    };
    for k in &envelope {
        claim(Box::leak(k.clone().into_boxed_str()), "the envelope");
    }
    for k in extras {
        claim(k, "the extras");
    }
    for k in results {
        claim(k, "the results");
    }
    // A body sits beside the envelope, extras and results, never beside
    // another body.
    let shared = owner.clone();
    let mut clashes = Vec::new();
    for (body, ks) in bodies {
        for k in ks {
            if let Some(other) = shared.get(k) {
                clashes.push(format!("{k}: {other} and body {body}"));
            }
        }
    }
    // Two keys of the JSON contract older than this check, each shared with
    // a part its command never fills: probe's summary (extras) and the
    // envelope's notes are empty on the documents of `sim show` and `sim
    // reproduce EXPERIMENT`, which measure nothing. Any other is new.
    let known = [
        "summary: the extras and body SimShow",
        "notes: the envelope and body Reproduced",
    ];
    assert_eq!(clashes, known, "a new key shared at the top level");
    assert!(shared.contains_key("command") && shared.contains_key("open_au") && shared.contains_key("summary"));
}
