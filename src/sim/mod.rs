//! Simulated cards behind the same [`Target`] seam as real devices: virtual time
//! (no sleeping), deterministic for a spec and seed, data kept sparsely. A card
//! model ([`ftl`], flash timings) sits behind a host model (bus framing, commands,
//! interrupts, software overhead, requests in flight); each resource keeps a "busy
//! until" time, so a request costs O(1) whatever its size.

mod device_info;
pub mod ftl;
pub mod generate;
pub mod hosts;
pub mod params;
pub mod profiles;
pub mod replay;
pub mod reproduce;
pub mod store;

use serde::{Deserialize, Serialize};

use crate::targets::{
    AlignedBuf, Completion, Completions, Op, Request, Target, TargetDescription, TargetError, TargetKind,
    check_requests,
};
use params::{Erased, FakeMode, ParamError, Params, Protocol};

/// What a sim run did, for tests, reports and `sim reproduce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters {
    pub requests: u64,
    pub commands: u64,
    pub interrupts: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub gc_events: u64,
    /// Time the card (bus + flash) was busy, ns.
    pub busy_ns: u64,
    /// Of that, the flash's time merging AUs and collecting blocks, before
    /// noise: what a request waits for behind a merge (`life`'s stalls).
    pub merge_ns: u64,
}

/// A simulated card and host.
pub struct SimTarget {
    desc: TargetDescription,
    pub params: Params,
    pub ftl: ftl::Ftl,
    store: store::Store,
    pub counters: Counters,
    /// Virtual clock: completion time of the last request, ns.
    now: u64,
    host_free: u64,
    card_free: u64,
    rng: u64,
    /// Whether the first command (which pays `wake_ns`) has been seen.
    woken: bool,
    /// Merge time of the request being served (see `jitter`).
    merge_ns: u64,
    /// Byte after the last read, to tell sequential reads from random ones.
    last_read_end: Option<u64>,
    /// The page in the card's page register after the last read; a write
    /// replaces it.
    read_page: Option<u64>,
    /// A fake card's write cache (`write_cache`): recent sectors by address.
    cache: WriteCache,
    /// Completion times of requests [`SimTarget::serve_at`] took that may
    /// still be in flight.
    in_flight: Vec<u64>,
    /// Completion times of the last requests a replay gave the host's
    /// queue, oldest first ([`replay`]).
    queue: std::collections::VecDeque<u64>,
}

/// The last `capacity` sectors written, by address, oldest first out: what
/// a fake card's controller keeps in RAM and returns for a read of a recent
/// write, whatever happened to the flash behind it.
#[derive(Debug, Default)]
struct WriteCache {
    capacity: usize,
    sectors: std::collections::HashMap<u64, Box<[u8]>>,
    order: std::collections::VecDeque<u64>,
}

impl WriteCache {
    fn write(&mut self, sector: u64, data: &[u8]) {
        if self.capacity == 0 {
            return;
        }
        if self.sectors.insert(sector, data.into()).is_none() {
            self.order.push_back(sector);
        }
        while self.sectors.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.sectors.remove(&old);
            }
        }
    }

    fn read(&self, sector: u64, out: &mut [u8]) {
        if let Some(d) = self.sectors.get(&sector) {
            out.copy_from_slice(d);
        }
    }
}

/// One piece of a request on the card: where its bytes really are, how
/// many, where they start in the request, and whether the card drops them
/// (a drop-mode fake past its real capacity).
struct Piece {
    phys: u64,
    len: u64,
    at: usize,
    dropped: bool,
}

/// Build parameters from `sim:BASE,key=value...` (BASE a profile or a .toml file).
pub fn params_from_spec(base: &str, overrides: &[(String, String)]) -> Result<Params, ParamError> {
    let mut p = if base.ends_with(".toml") {
        let text = read_profile_file(base)?;
        let mut p = Params::default();
        p.apply_toml(&text, base)?;
        p
    } else {
        profiles::build(base)?
    };
    // The host preset first, so individual host keys given with it win.
    for (k, v) in overrides.iter().filter(|(k, _)| k == "host") {
        p.set(k, v)?;
    }
    for (k, v) in overrides.iter().filter(|(k, _)| k != "host") {
        p.set(k, v)?;
    }
    p.validate()?;
    Ok(p)
}

/// Read a `sim:FILE.toml`: a regular file of at most
/// [`params::MAX_PROFILE_FILE`] bytes. Opened without blocking, so a FIFO
/// cannot hang the run, and read with a limit, so a device cannot feed it
/// forever.
fn read_profile_file(path: &str) -> Result<String, ParamError> {
    crate::files::read_small(std::path::Path::new(path), params::MAX_PROFILE_FILE).map_err(|why| ParamError::File {
        path: path.to_string(),
        why,
    })
}

impl SimTarget {
    /// A simulated card from its spec as the CLI reads it
    /// (`sim:demo,capacity=64M`), or why not.
    pub fn from_spec(spec: &str) -> Result<SimTarget, String> {
        match crate::targets::spec::TargetSpec::parse(spec).map_err(|e| e.to_string())? {
            crate::targets::spec::TargetSpec::Sim { base, overrides } => params_from_spec(&base, &overrides)
                .map(|p| SimTarget::new(spec, p))
                .map_err(|e| e.to_string()),
            crate::targets::spec::TargetSpec::Path(_) => Err(format!("{spec} is not a simulated card")),
        }
    }
}

impl SimTarget {
    pub fn new(spec: &str, params: Params) -> Self {
        let cached_sectors = (params.write_cache / u64::from(params.sector_size.max(1))) as usize;
        SimTarget {
            desc: TargetDescription {
                spec: spec.to_string(),
                kind: TargetKind::Sim,
                size_bytes: params.capacity,
                logical_block_size: params.sector_size,
                physical_block_size: params.sector_size,
            },
            rng: params.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            params,
            ftl: ftl::Ftl::default(),
            store: store::Store::default(),
            counters: Counters::default(),
            now: 0,
            host_free: 0,
            card_free: 0,
            woken: false,
            merge_ns: 0,
            last_read_end: None,
            read_page: None,
            cache: WriteCache {
                capacity: cached_sectors,
                ..Default::default()
            },
            in_flight: Vec::new(),
            queue: std::collections::VecDeque::new(),
        }
    }

    fn erased_byte(&self) -> u8 {
        if self.params.erased == Erased::Ones { 0xff } else { 0 }
    }

    /// Heap bytes holding card data.
    pub fn data_bytes(&self) -> u64 {
        self.store.data_bytes()
    }

    /// A seeded uniform draw in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Seeded noise on one command's card time: the jitter factor in
    /// [1 - jitter, 1 + jitter], then (each only when its key is set, so the
    /// calibrated profiles draw exactly as before) a slow drift, a heavy-tailed
    /// outlier, and a background GC pause.
    /// Jitter, drift, outliers and pauses on a command's `ns` of card
    /// time, of which `merge` merged AUs: an outlier (a stall of the reader
    /// or the card's firmware) stretches the command's own work, not the
    /// merge it happened to wait on (a 7-second merge made 30 times longer
    /// was a 4-minute write no card shows).
    fn jitter(&mut self, ns: u64, merge: u64) -> u64 {
        let p = &self.params;
        let (jitter, drift, period) = (p.jitter, p.drift, p.drift_period_ns);
        let (outliers, factor) = (p.outlier_fraction, p.outlier_factor);
        let (pauses, pause) = (p.gc_pause_fraction, p.gc_pause_ns);
        let merge = merge.min(ns) as f64;
        let base = ns as f64 - merge;
        let mut t = base;
        if jitter > 0.0 {
            t *= 1.0 + jitter * (2.0 * self.uniform() - 1.0);
        }
        if drift > 0.0 && period > 0 {
            let phase = (self.now % period) as f64 / period as f64;
            t *= 1.0 + drift * (std::f64::consts::TAU * phase).sin();
        }
        // Jitter and drift scale the merge as the rest; an outlier does not.
        let spread = if base > 0.0 { t / base } else { 1.0 };
        if outliers > 0.0 && self.uniform() < outliers {
            t *= factor.max(1) as f64;
        }
        t += merge * spread;
        if pauses > 0.0 && self.uniform() < pauses {
            t += pause as f64;
        }
        t as u64
    }

    fn clocks_ns(&self, clocks: u64) -> u64 {
        clocks * 1_000_000_000 / self.params.clock_hz
    }

    /// Bus, card and host time of one request, split into host CPU time (before
    /// and after) and card time.
    fn service(&mut self, r: &Request) -> (u64, u64, u64) {
        let p = &self.params;
        let sector = u64::from(p.sector_size);
        let blocks = u64::from(r.len) / sector;
        let per_cmd = p.max_blocks_per_cmd;
        let cmds = blocks.div_ceil(per_cmd);
        let irqs = if p.irq_per_block { blocks } else { cmds };
        let write = r.op == Op::Write;
        self.counters.commands += cmds;
        self.counters.interrupts += irqs;
        let host_before = cmds * p.host_overhead_ns;
        let host_after = irqs * p.irq_ns + if write { cmds * p.write_status_ns } else { 0 };
        let mut card = 0;
        if !self.woken {
            self.woken = true;
            card += p.wake_ns;
        }
        // The card sees each command as its own transaction, and its noise
        // with it: a stall stretches the command it hits, not the program's
        // whole request. Through a block device the kernel hands the card
        // the host's commands as separate requests (an emulated at91 card
        // got a 1 MiB read as 32 requests of 32 KiB); drawn per request, one
        // outlier made that read 30 times 480 ms (14 s), where the same
        // card behind the loop device took 1.4 s at most.
        let mut off = r.offset;
        let mut left = u64::from(r.len);
        while left > 0 {
            let n = left.min(per_cmd * sector);
            let ns = self.command(r.op, off, n);
            let merge = std::mem::take(&mut self.merge_ns);
            self.counters.merge_ns += merge;
            card += self.jitter(ns, merge);
            off += n;
            left -= n;
        }
        (host_before, card, host_after)
    }

    /// Card and bus time of one command of `len` bytes. Data streams block by block
    /// while the flash works: a read waits for its first page and then overlaps
    /// the rest with the transfer; a write fills the card's page buffer once and
    /// then programs while later blocks arrive (the card signals busy only when
    /// its buffer is full).
    fn command(&mut self, op: Op, off: u64, len: u64) -> u64 {
        let p = &self.params;
        let sector = u64::from(p.sector_size);
        let blocks = len / sector;
        let (frame, per_block) = match p.protocol {
            Protocol::Mmc => {
                // Command + response + turnaround on the CMD line (48-bit command,
                // 48-bit response, NCR/NRC gaps), twice with a stop command; per
                // block the data bits over the data lines, 16 CRC clocks, start
                // and end bits (SD Physical Layer spec 4.12 timings, 7.3 data
                // packet format).
                let stop = blocks > 1 && !p.set_block_count;
                let cmd_clocks = 136 * if stop { 2 } else { 1 };
                let data_clocks = (sector * 8 / u64::from(p.bus_width)) / if p.ddr { 2 } else { 1 } + 18;
                (
                    self.clocks_ns(cmd_clocks),
                    self.clocks_ns(data_clocks) + p.host_block_ns,
                )
            }
            Protocol::AtaPio => {
                let pio = if op == Op::Read {
                    p.ata_pio_sector_ns
                } else {
                    p.ata_pio_write_sector_ns
                };
                let frame = if op == Op::Read { p.ata_cmd_to_data_ns } else { 0 };
                let next = (blocks - 1) * p.ata_next_sector_ns;
                (frame + next, pio + p.host_block_ns)
            }
        };
        let stream = blocks * per_block;
        match op {
            Op::Read => {
                // A command that starts where the last read ended continues
                // it: no random-access cost, and the page register still holds
                // the page it ended in (a single-block host reads a page with
                // one page load, not one per block). Crossing a page or AU
                // boundary between two such commands costs what crossing it
                // inside one command does, so flashbench -a's steps show on
                // single-block hosts too.
                let continues = self.last_read_end == Some(off);
                let random = if continues { 0 } else { p.random_read_ns };
                let first_page = off / p.page_size;
                let first_load = if continues && self.read_page == Some(first_page) {
                    0
                } else {
                    p.page_read_ns
                };
                let from = if continues { off - 1 } else { off };
                let pages = (off + len - 1) / p.page_size - first_page + 1;
                let au_crossings = (off + len - 1) / p.au_size - from / p.au_size;
                // Later pages are read while earlier ones stream out; crossing
                // into another AU also means a new address translation, which
                // stalls the read (the step flashbench -a sees at the AU size).
                let rest = (pages - 1) * p.page_read_ns;
                // The codewords a read touches beyond those its length
                // fills: a read straddling a codeword's edge moves one more.
                let codewords = p
                    .codeword_size
                    .map_or(0, |cw| ((off + len - 1) / cw - off / cw + 1) - len.div_ceil(cw));
                let ns = frame
                    + p.card_access_ns
                    + random
                    + first_load
                    + stream.max(rest)
                    + au_crossings * p.au_cross_read_ns
                    + codewords * p.codeword_read_ns;
                self.last_read_end = Some(off + len);
                self.read_page = Some((off + len - 1) / p.page_size);
                ns
            }
            Op::Write => {
                self.read_page = None;
                let page_blocks = (p.page_size / sector).max(1);
                let fill = blocks.min(page_blocks) * per_block;
                let fixed = frame + fill + p.write_commit_ns;
                let flash = self.flash_write(off, len);
                fixed + (stream - fill).max(flash)
            }
        }
    }

    fn flash_write(&mut self, mut off: u64, len: u64) -> u64 {
        let end = off + len;
        let mut ns = 0;
        while off < end {
            let au = off / self.params.au_size;
            let au_end = ((au + 1) * self.params.au_size).min(end);
            let cost = self
                .ftl
                .write(&self.params, au, off - au * self.params.au_size, au_end - off);
            ns += cost.ns;
            self.merge_ns += cost.merge_ns;
            off = au_end;
        }
        ns
    }

    /// Physical pieces of a logical range: past its real capacity a fake card
    /// wraps addresses onto the start, or drops them.
    fn physical(&self, off: u64, len: u64) -> Vec<Piece> {
        let Some(real) = self.params.real_capacity else {
            return vec![Piece {
                phys: off,
                len,
                at: 0,
                dropped: false,
            }];
        };
        let mut out = Vec::new();
        let (mut o, mut done) = (off, 0u64);
        while done < len {
            let piece = if let (FakeMode::Chain, Some(module)) = (self.params.fake_mode, self.params.fake_module) {
                // Wrap at the module; past the real part of it, lost.
                let m = o % module;
                let end = if m < real { real } else { module };
                Piece {
                    phys: m,
                    len: (len - done).min(end - m),
                    at: done as usize,
                    dropped: m >= real,
                }
            } else if self.params.fake_mode == FakeMode::Wrap {
                let phys = o % real;
                let n = (len - done).min(real - phys);
                Piece {
                    phys,
                    len: n,
                    at: done as usize,
                    dropped: false,
                }
            } else {
                let n = if o < real {
                    (len - done).min(real - o)
                } else {
                    len - done
                };
                Piece {
                    phys: o,
                    len: n,
                    at: done as usize,
                    dropped: o >= real,
                }
            };
            o += piece.len;
            done += piece.len;
            out.push(piece);
        }
        out
    }

    /// What a drop-mode fake returns for a block it never kept.
    fn lost(&self, phys: u64, out: &mut [u8]) {
        if self.params.fake_mode == FakeMode::DropStale {
            // Old data: a seeded stream per 8 bytes, the same on every read.
            for (i, b) in out.iter_mut().enumerate() {
                let w = (phys + i as u64) / 8;
                let mut x = (w ^ self.params.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                x ^= x >> 31;
                *b = (x >> (8 * ((phys + i as u64) % 8))) as u8;
            }
        } else {
            out.fill(0);
        }
    }

    /// One request's time through the host and the card from `host_start`
    /// on the virtual clock: its completion time. The card's state moves
    /// with it; its data does not (that is [`SimTarget::perform`]'s).
    fn schedule(&mut self, r: &Request, host_start: u64) -> u64 {
        let (before, card, after) = self.service(r);
        // The host prepares a request, the card serves it, the host takes the
        // completion. With more than one request in flight the host prepares
        // the next one while the card works; its CPU time per request
        // (before + after) is reserved so the host never does two things at once.
        let prep_end = host_start.max(self.host_free) + before;
        let card_start = prep_end.max(self.card_free);
        let card_end = card_start + card;
        self.card_free = card_end;
        let complete = card_end + after;
        self.host_free = prep_end + after;
        self.counters.busy_ns += card;
        self.counters.requests += 1;
        match r.op {
            Op::Read => self.counters.bytes_read += u64::from(r.len),
            Op::Write => self.counters.bytes_written += u64::from(r.len),
        }
        complete
    }

    /// One request through the host and the card from `host_start` on the
    /// virtual clock (its data moved as the card moves it): its completion
    /// time and the error it ends with.
    fn perform(&mut self, r: &Request, host_start: u64, buf: &mut AlignedBuf, erased: u8) -> (u64, Option<i32>) {
        let complete = self.schedule(r, host_start);
        let errno = self.bad(r.offset, u64::from(r.len)).then_some(libc::EIO);
        let range = r.buf_offset..r.buf_offset + r.len as usize;
        match r.op {
            Op::Read => {
                let slice = &mut buf.as_mut_slice()[range];
                if self.params.keep_data {
                    for p in self.physical(r.offset, u64::from(r.len)) {
                        let out = &mut slice[p.at..p.at + p.len as usize];
                        if p.dropped {
                            self.lost(p.phys, out);
                        } else {
                            self.store.read(p.phys, out, erased);
                        }
                    }
                    let ss = u64::from(self.params.sector_size);
                    for (i, out) in slice.chunks_mut(ss as usize).enumerate() {
                        self.cache.read(r.offset / ss + i as u64, out);
                    }
                } else {
                    slice.fill(erased);
                }
            }
            Op::Write => {
                if self.params.keep_data && errno.is_none() {
                    let data = &buf.as_slice()[range];
                    for p in self.physical(r.offset, u64::from(r.len)) {
                        if !p.dropped {
                            self.store.write(p.phys, &data[p.at..p.at + p.len as usize], erased);
                        }
                    }
                    let ss = u64::from(self.params.sector_size);
                    for (i, d) in data.chunks(ss as usize).enumerate() {
                        self.cache.write(r.offset / ss + i as u64, d);
                    }
                }
            }
        }
        (complete, errno)
    }

    /// Serve one request arriving at `arrival` on the virtual clock, as
    /// `flashlab emulate` receives them (one by one from the kernel, some
    /// overlapping): it waits while the host's queue holds `queue_depth`
    /// others and while the card is busy, as in [`Target::run`]. Its
    /// completion time and error.
    pub fn serve_at(
        &mut self,
        arrival: u64,
        r: &Request,
        buf: &mut AlignedBuf,
    ) -> Result<(u64, Option<i32>), TargetError> {
        check_requests(&self.desc, std::slice::from_ref(r), 1, buf.len(), true)?;
        let qd = (self.params.queue_depth.max(1) as usize).min(self.params.in_flight.max(1) as usize);
        self.in_flight.retain(|&c| c > arrival);
        let mut host_start = arrival;
        if self.in_flight.len() >= qd {
            self.in_flight.sort_unstable();
            host_start = host_start.max(self.in_flight[self.in_flight.len() - qd]);
        }
        let erased = self.erased_byte();
        let (complete, errno) = self.perform(r, host_start, buf, erased);
        self.in_flight.push(complete);
        self.now = self.now.max(complete);
        self.counters.gc_events = self.ftl.work.merges;
        Ok((complete, errno))
    }

    /// The card's flash work so far ([`ftl::Ftl::report`]).
    pub fn flash_report(&self) -> ftl::FlashReport {
        self.ftl.report(&self.params, self.counters.bytes_written)
    }

    fn bad(&self, off: u64, len: u64) -> bool {
        self.params
            .bad_ranges
            .iter()
            .any(|&(s, l)| off < s + l && s < off + len)
    }
}

impl Target for SimTarget {
    fn description(&self) -> &TargetDescription {
        &self.desc
    }

    fn keeps_data(&self) -> bool {
        self.params.keep_data
    }

    fn run(&mut self, requests: &[Request], queue_depth: usize, buf: &mut AlignedBuf) -> Completions {
        check_requests(&self.desc, requests, queue_depth, buf.len(), true)?;
        // The program keeps `queue_depth` requests outstanding; the host
        // takes at most its own queue's worth, and the rest wait in the block
        // layer. A request's latency runs from when the program issued it,
        // so that wait counts, as it does on a real device.
        let app_qd = queue_depth.max(1);
        let qd = app_qd.min(self.params.queue_depth as usize).max(1);
        let in_flight = self.params.in_flight as usize;
        let start = self.now;
        let mut done: Vec<u64> = Vec::with_capacity(requests.len());
        let mut out = Vec::with_capacity(requests.len());
        let erased = self.erased_byte();
        for (i, r) in requests.iter().enumerate() {
            let submit = if i >= app_qd { done[i - app_qd] } else { start };
            let mut host_start = submit;
            if i >= qd {
                host_start = host_start.max(done[i - qd]);
            }
            if i >= in_flight {
                host_start = host_start.max(done[i - in_flight]);
            }
            let (complete, errno) = self.perform(r, host_start, buf, erased);
            done.push(complete);
            out.push(Completion {
                duration_ns: complete - submit,
                errno,
            });
        }
        self.now = done.iter().copied().max().unwrap_or(self.now);
        self.counters.gc_events = self.ftl.work.merges;
        Ok(out)
    }

    fn device_time_ns(&self) -> u64 {
        self.now
    }
}

#[cfg(test)]
mod tests;
