//! Measurements other tools printed, read into flashlab's results: for
//! now flashbench's text output (`flashlab import flashbench FILE...`).
//! Above the tests (it fills their results, judged by their rules) and
//! below the document (the command puts them in one).

pub mod flashbench;
