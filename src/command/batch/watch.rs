//! `batch --watch`: a test station. Each card is tested as it is put into
//! a slot (a disk added, or a reader's medium arriving: its size goes from
//! 0 to the card's), on its own thread like any batch device; pull it and
//! its row is final (mid-test, "removed", its journal waiting until it
//! returns). Slots are the devices named, or every removable disk. The
//! station ends on Ctrl-C or SIGTERM with one table of every card it saw.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{Done, Shared, devices, joined, rows, spawn};
use crate::args::TargetArg;
use crate::error::{CliError, CliResult};
use crate::identify::uevent::Uevents;

/// How long the station waits for an event before it looks at signals and
/// finished tests again.
const TICK: Duration = Duration::from_millis(200);

/// A station ready to start: its slots, and the kernel's events.
pub(super) struct Station {
    slots: Slots,
    events: Uevents,
}

/// The slots named (refused unless each is a block device) and the
/// kernel's device events, or why a station cannot hear them.
pub(super) fn listen(named: &[TargetArg]) -> CliResult<Station> {
    let slots = Slots::of(named)?;
    let events = Uevents::open().map_err(|e| {
        CliError::usage(format!(
            "--watch cannot listen for the kernel's device events (netlink uevents): {e}"
        ))
        .hint("run as root on the host, not in a container without netlink; or name the devices and leave out --watch")
    })?;
    Ok(Station { slots, events })
}

/// The slots a station watches: the block devices named, or (none named)
/// every removable disk as it comes.
struct Slots(Option<BTreeSet<String>>);

impl Slots {
    fn of(named: &[TargetArg]) -> CliResult<Slots> {
        if named.is_empty() {
            return Ok(Slots(None));
        }
        let mut out = BTreeSet::new();
        for t in named {
            if !devices::is_block_device(t) {
                return Err(
                    CliError::usage(format!("--watch watches slots, and {} is not a block device", t.text))
                        .hint("name the readers' disks (/dev/sdb /dev/sdc), or none for every removable disk"),
                );
            }
            out.insert(t.text.clone());
        }
        Ok(Slots(Some(out)))
    }

    fn watches(&self, dev: &str) -> bool {
        match &self.0 {
            Some(named) => named.contains(dev),
            None => devices::is_removable(std::path::Path::new("/sys/block"), dev.trim_start_matches("/dev/")),
        }
    }

    /// The slots with a card in them now.
    fn full_now(&self) -> Vec<String> {
        match &self.0 {
            Some(named) => named.iter().filter(|d| has_card(d)).cloned().collect(),
            None => devices::removable(std::path::Path::new("/sys/block")),
        }
    }
}

fn has_card(dev: &str) -> bool {
    devices::size_of(dev).is_some_and(|s| s > 0)
}

/// Test cards as they come until a signal; every card's outcome, in the
/// order their tests ended, and whether the signal stopped a test.
pub(super) fn station(shared: &Shared, station: &Station) -> (Vec<Done>, bool) {
    let Station { slots, events } = station;
    crate::errln!(
        "watching {} for cards until Ctrl-C or SIGTERM",
        match &slots.0 {
            Some(named) => named.iter().cloned().collect::<Vec<_>>().join(", "),
            None => "every removable disk".into(),
        }
    );
    std::thread::scope(|scope| {
        let mut running = BTreeMap::new();
        // Slots whose card came (again) while its last test still ran.
        let mut again = BTreeSet::new();
        let mut present: BTreeSet<String> = BTreeSet::new();
        let mut done: Vec<Done> = Vec::new();
        let mut n = 0;
        let mut arrive = |dev: &str, running: &mut BTreeMap<String, _>, again: &mut BTreeSet<String>| {
            if running.contains_key(dev) {
                again.insert(dev.to_string());
                return;
            }
            let Ok(t) = crate::args::target(dev) else { return };
            n += 1;
            crate::errln!("{dev}: a card is in; testing it (card {n})");
            let name = dev.trim_start_matches("/dev/").to_string();
            running.insert(dev.to_string(), (t.clone(), spawn(scope, shared, t, name, None)));
        };
        for dev in slots.full_now() {
            present.insert(dev.clone());
            arrive(&dev, &mut running, &mut again);
        }
        let stopped = loop {
            if crate::safety::signals::pending().is_some() {
                break !running.is_empty();
            }
            let finished: Vec<String> = running
                .iter()
                .filter(|(_, (_, h))| h.is_finished())
                .map(|(d, _)| d.clone())
                .collect();
            for dev in finished {
                let Some((t, h)) = running.remove(&dev) else { continue };
                let d = joined(h, &t, dev.trim_start_matches("/dev/"));
                say(shared, &d, &done);
                done.push(d);
                if again.remove(&dev) && has_card(&dev) {
                    arrive(&dev, &mut running, &mut again);
                }
            }
            let e = match events.next(TICK) {
                Ok(Some(e)) if e.is_disk() => e,
                Ok(_) => continue,
                Err(e) => {
                    crate::errln!("warning: the station stopped hearing device events: {e}");
                    break !running.is_empty();
                }
            };
            let dev = format!("/dev/{}", e.devname);
            if !slots.watches(&dev) {
                continue;
            }
            let card = e.action != "remove" && has_card(&dev);
            match (card, present.contains(&dev)) {
                (true, false) => {
                    present.insert(dev.clone());
                    arrive(&dev, &mut running, &mut again);
                }
                (false, true) => {
                    present.remove(&dev);
                    again.remove(&dev);
                    crate::errln!("{dev}: the card is out");
                }
                _ => {}
            }
        };
        for (dev, (t, h)) in std::mem::take(&mut running) {
            done.push(joined(h, &t, dev.trim_start_matches("/dev/")));
        }
        (done, stopped)
    })
}

/// A card's line as its test ends, judged against the station's medians so
/// far (the table at the end judges against all).
fn say(shared: &Shared, d: &Done, before: &[Done]) {
    let medians = rows::medians(before.iter().chain([d]));
    let r = rows::row(d, &medians, &shared.timeline.spans());
    let line = format!("{}: {}: {}", r.slot, r.verdict.as_str(), r.why);
    crate::errln!("{}", crate::console::wrap(&line, "", "  "));
}
