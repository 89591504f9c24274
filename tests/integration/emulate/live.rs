//! The live counters where stderr is not a terminal (a log): a line when
//! they changed, none while the card sits idle (a line every 2 s had
//! filled a pane with identical lines after a few minutes).

use std::time::Duration;

use super::{Emu, cannot_emulate, run};
use crate::support::require_loop_devices;

#[test]
fn a_log_gets_a_counter_line_only_when_something_changed() {
    require_emulation!();
    let dir = tempfile::tempdir().unwrap();
    let mut emu = Emu::start(dir.path(), "sim:demo,capacity=128M", &["--time-scale", "0.1"]);
    let dev = emu.device.clone();
    run(
        "dd",
        &[
            &format!("if={dev}"),
            "of=/dev/null",
            "bs=64k",
            "count=1",
            "iflag=direct",
        ],
    );
    // The read's line at the first 2 s; then two idle turns of 2 s each.
    std::thread::sleep(Duration::from_millis(6500));
    let (code, err) = emu.stop_with(libc::SIGTERM);
    assert_eq!(code, Some(0), "{err}");
    let counters: Vec<&str> = err.lines().filter(|l| l.contains("; AUs ")).collect();
    assert_eq!(counters.len(), 1, "{err}");
    // Reads only (the kernel's own probe of a new disk among them), and
    // the open AUs of each kind against the 6 and 24 the card keeps.
    let reads = counters[0].split_once(' ').unwrap();
    assert!(reads.0.parse::<u64>().unwrap() >= 1, "{err}");
    assert!(reads.1.starts_with("read") && reads.1.contains(", 0 writes, "), "{err}");
    assert!(
        counters[0].ends_with(", 0 merges; AUs 0/6 in order, 0/24 random"),
        "{err}"
    );
}
