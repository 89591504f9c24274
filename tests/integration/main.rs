//! flashlab's one integration-test binary (ripgrep's habit): every module runs the
//! real binary or the real library against real files and loop devices.

mod batch;
mod bench;
mod capacity;
mod citations;
mod conformance;
mod contract;
mod decode;
mod emulate;
mod fleet;
mod formats;
mod import;
mod info;
mod layers;
mod life;
mod measure;
mod not_claimed;
mod not_flash;
mod probe;
mod readme;
mod refusals;
mod registry;
mod report;
mod results;
mod safety;
mod sim;
mod support;
