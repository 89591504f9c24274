//! Random simulated cards for the property tests and the calibration and
//! budget examples. The calibration family: timing jitter 0-25% with
//! heavy-tailed outliers, hosts from UHS-I down to at91-mci with
//! multi-block, 512- and 4096-byte sectors, capacities from 96 AUs, AUs of
//! 1-128 MiB including 3 x 2^n, pages of 4-64 KiB, 1-30 open AUs each way,
//! FAT areas of 0-6 AUs. The hard family ([`Family::Hard`]) is where device
//! time goes: large AUs with 4 KiB pages, 96-AU cards, slow hosts.

use super::SimTarget;

/// What a generated card really is, for scoring the verdicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truth {
    pub au: u64,
    pub page: u64,
    pub linear: u64,
    pub random: u64,
    pub fat: u64,
    pub sector: u32,
}

use crate::random::xorshift as next;

const AUS: [u64; 14] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128];
/// The hard family's AUs: 2 to 128 MiB, 3 x 2^n included.
const HARD_AUS: [u64; 13] = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128];
/// The hard family's hosts, slow ones twice.
const HARD_HOSTS: [&[(&str, &str)]; 6] = [
    &[("host", "uhs1-sdr104")],
    &[("host", "generic")],
    &[("host", "am335x-hsmmc")],
    &[("host", "am335x-hsmmc")],
    &[("host", "at91-mci"), ("max_blocks_per_cmd", "64")],
    &[("host", "at91-mci"), ("max_blocks_per_cmd", "64")],
];
const HOSTS: [&[(&str, &str)]; 4] = [
    &[("host", "uhs1-sdr104")],
    &[("host", "generic")],
    &[("host", "am335x-hsmmc")],
    &[("host", "at91-mci"), ("max_blocks_per_cmd", "64")],
];

/// Which cards to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The calibration family: every kind of card in proportion.
    Calibration,
    /// Where device time goes: large AUs with small pages (a write past
    /// the open-AU limit merges a whole AU), few AUs (96 to 512: little room
    /// for a sweep), slow hosts, and jitter of 10-25%.
    Hard,
    /// Cards as flashbench users measured them (`import flashbench`'s
    /// test): AUs of 1-16 MiB with 3 x 2^n, pages of 4-32 KiB, 1-12 open
    /// AUs each way, jitter 0-20%, and room for flashbench's --open-au
    /// layout (16 MiB, then 12 erase blocks per open AU, twice that for a
    /// wrong --erasesize).
    Flashbench,
}

/// The flashbench family's AUs.
const FLASHBENCH_AUS: [u64; 8] = [1, 2, 3, 4, 6, 8, 12, 16];

/// One random card of the calibration family, its spec text (for reruns)
/// and its truth.
pub fn card(rng: &mut u64) -> (SimTarget, String, Truth) {
    card_of(Family::Calibration, rng)
}

/// One random card of `family`.
pub fn card_of(family: Family, rng: &mut u64) -> (SimTarget, String, Truth) {
    let hard = family == Family::Hard;
    let fb = family == Family::Flashbench;
    let aus_from: &[u64] = match family {
        Family::Hard => &HARD_AUS,
        Family::Flashbench => &FLASHBENCH_AUS,
        Family::Calibration => &AUS,
    };
    let au = aus_from[(next(rng) % aus_from.len() as u64) as usize] << 20;
    let sector: u32 = if next(rng).is_multiple_of(4) { 4096 } else { 512 };
    // Half the hard cards have 4 KiB pages: the dearest merges.
    let page = if hard && next(rng).is_multiple_of(2) {
        4u64 << 10
    } else {
        ((4u64 << 10) << (next(rng) % if fb { 4 } else { 5 })).min(au / 4)
    };
    let linear = 1 + next(rng) % if fb { 12 } else { 30 };
    // The model's random-order AUs come out of its open AUs.
    let random = 1 + next(rng) % linear;
    // flashbench's --open-au starts 16 MiB in, "to skip FAT": its cards'
    // FAT areas end before (one inside would lend a sweep an extra AU).
    let fat = next(rng) % if fb { ((16u64 << 20) / au + 1).min(7) } else { 7 };
    let aus = if hard {
        // A third of them at the 96-AU floor, the rest up to 2048.
        match next(rng) % 3 {
            0 => 96,
            1 => 97 + next(rng) % 416,
            _ => 513 + next(rng) % 1536,
        }
    } else if fb {
        // 16 MiB, then 12 erase blocks per open AU up to two past the
        // limit, with room for an --erasesize of twice the AU.
        (16u64 << 20).div_ceil(au) + 24 * (linear + 3) + next(rng) % 64
    } else {
        96 + next(rng) % 417
    };
    let jitter = if hard {
        (100 + next(rng) % 151) as f64 / 1000.0
    } else if fb {
        (next(rng) % 201) as f64 / 1000.0
    } else {
        (next(rng) % 251) as f64 / 1000.0
    };
    let outliers = (next(rng) % 21) as f64 / 1000.0;
    let hosts: &[&[(&str, &str)]] = if hard { &HARD_HOSTS } else { &HOSTS };
    let host = hosts[(next(rng) % hosts.len() as u64) as usize];
    let seed = next(rng) % 1_000_000;
    let mut settings: Vec<(String, String)> = host.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    for (k, v) in [
        ("capacity", (au * aus).to_string()),
        ("sector_size", sector.to_string()),
        ("page_size", page.to_string()),
        ("au_size", au.to_string()),
        ("open_aus_linear", linear.to_string()),
        ("open_aus_random", random.to_string()),
        ("fat_area_aus", fat.to_string()),
        ("jitter", format!("{jitter}")),
        ("outlier_fraction", format!("{outliers}")),
        ("outlier_factor", "30".to_string()),
        ("seed", seed.to_string()),
        // The hard family is probed whole, capacity included, which reads
        // back what it wrote: a card that keeps no data would be a fake.
        ("keep_data", hard.to_string()),
    ] {
        settings.push((k.to_string(), v));
    }
    let spec = format!(
        "sim:demo,{}",
        settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut p = super::profiles::build("demo").unwrap_or_default();
    for (k, v) in &settings {
        // Every value above is in range for its key; a refusal would be a
        // bug in this generator, and the card keeps the profile's value.
        let _ = p.set(k, v);
    }
    let t = SimTarget::new(&spec, p);
    (
        t,
        spec,
        Truth {
            au,
            page,
            linear,
            random,
            fat,
            sector,
        },
    )
}
/// `work` on each of many cards, spread over every core, the answers in
/// the cards' order: how the calibration, the property tests and the
/// flashbench scoring get through hundreds of generated cards. A panic in
/// `work` is raised again here.
pub fn on_every_core<T: Send, R: Send>(cards: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let chunk = cards.len().div_ceil(threads).max(1);
    let mut left = cards.into_iter();
    let parts: Vec<Vec<T>> = std::iter::from_fn(|| Some(left.by_ref().take(chunk).collect::<Vec<T>>()))
        .take_while(|part| !part.is_empty())
        .collect();
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || part.into_iter().map(work).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}
