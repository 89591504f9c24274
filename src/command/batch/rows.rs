//! The rows of a batch: each device's outcome judged against the batch's
//! medians ([`super::verdict`]).

use super::{Done, verdict};
use crate::document::batch::{Batch, Medians, Row, RowVerdict};
use crate::measure::bench;
use crate::runner::many::Span;

/// Sequential 1 MiB speed of a row, MB/s, as bench measured it.
fn speed(d: &Done, rw: bench::Rw) -> Option<f64> {
    let b = d.doc.as_ref()?.results.bench.get()?;
    b.tests
        .iter()
        .find(|t| t.rw == rw && t.block_size == 1 << 20 && !t.short_sample)
        .map(|t| t.bytes_per_sec / 1e6)
}

/// The speed of flash only: a file's or a loop device's is its page
/// cache's, and a median of them says nothing of a card.
fn flash(d: &Done, rw: bench::Rw) -> Option<f64> {
    let b = d.doc.as_ref()?.results.bench.get()?;
    b.not_flash.is_none().then(|| speed(d, rw)).flatten()
}

/// The medians of the flash rows among `done`.
pub(super) fn medians<'a>(done: impl Iterator<Item = &'a Done> + Clone) -> Medians {
    Medians {
        read_mb_s: verdict::median(done.clone().filter_map(|d| flash(d, bench::Rw::Read)).collect()),
        write_mb_s: verdict::median(done.filter_map(|d| flash(d, bench::Rw::Write)).collect()),
    }
}

/// The batch: every row judged against the medians of all, in the order
/// given.
pub(super) fn batch(id: String, done: &[Done], spans: &[Span], wall_s: f64) -> Batch {
    let medians = medians(done.iter());
    let mut rows: Vec<Row> = done.iter().map(|d| row(d, &medians, spans)).collect();
    for i in 1..rows.len() {
        let (before, here) = rows.split_at_mut(i);
        let r = &mut here[0];
        r.same_content_as = before
            .iter()
            .find(|b| {
                b.slot != r.slot && b.identity.fingerprint.is_some() && b.identity.fingerprint == r.identity.fingerprint
            })
            .map(|b| b.slot.clone());
    }
    Batch {
        id,
        rows,
        medians,
        wall_s,
    }
}

/// One device's row, judged against `medians`.
pub(super) fn row(d: &Done, medians: &Medians, spans: &[Span]) -> Row {
    let (read, write) = (speed(d, bench::Rw::Read), speed(d, bench::Rw::Write));
    let results = d.doc.as_ref().map(|x| x.results.clone()).unwrap_or_default();
    let cap = results.capacity.get();
    let b = results.bench.get();
    let (verdict, why) = match &d.ended {
        Some((v @ (RowVerdict::Skipped | RowVerdict::Removed), why)) => (*v, why.clone()),
        ended => verdict::judge(
            &verdict::Measured {
                capacity: cap,
                bench: b,
                read_mb_s: flash(d, bench::Rw::Read),
                write_mb_s: flash(d, bench::Rw::Write),
                claims: &d.claims,
                claimed_by: &d.claimed_by,
                failed: ended.as_ref().map(|(_, w)| w.as_str()),
                fill: d.fill.as_ref(),
            },
            medians,
        ),
    };
    Row {
        beside: crate::runner::many::beside(spans, &d.slot),
        speed_s: crate::runner::many::alone_s(spans, &d.slot),
        slot: d.slot.clone(),
        device: d.device.clone(),
        identity: d.identity.clone(),
        label: d.label.clone(),
        bus: d.bus.clone(),
        announced_bytes: cap.map_or(d.announced, |c| c.announced_bytes),
        usable_bytes: cap.map(|c| c.usable_bytes),
        fake_kind: cap.and_then(|c| c.kind),
        verdict,
        why,
        read_mb_s: read,
        write_mb_s: write,
        classes: b.map(|b| bench::classes::met(&b.classes)).unwrap_or_default(),
        claims: (!d.claims.is_empty()).then(|| {
            let c: Vec<String> = d.claims.iter().map(|c| c.to_string()).collect();
            format!("{} ({})", c.join(", "), d.claimed_by)
        }),
        run_id: *d.run_id.lock().unwrap_or_else(|p| p.into_inner()),
        ended_s: d.ended_s,
        restored: d.restored.clone(),
        same_content_as: None,
        fill: d.fill.clone(),
        results,
    }
}
