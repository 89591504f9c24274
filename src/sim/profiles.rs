//! Built-in cards, each with the seed it is modelled on. The
//! timing values are first estimates from the seeds' own figures (see each
//! source note); `flashlab sim reproduce` is where they are judged.

use super::params::{ParamError, Params};

use super::hosts::Preset;

/// The built-in cards: each a preset over [`Params::default`].
pub const PROFILES: &[Preset] = &[
    Preset {
        name: "demo",
        summary: "present-day A1 32 GB microSDHC: 6 AUs open, 24 random",
        source: "typical A1/U1 microSDHC (SD spec 4.10.2 classes); no published measurement of it. \
                 24 random-write AUs: A1 asks 500 random 4 KiB write IOPS, and agnostics' A1 \
                 test writes across 64 MiB (16-17 AUs of 4 MiB)",
        settings: &[
            ("host", "uhs1-sdr104"),
            ("capacity", "31914983424"),
            ("page_size", "16k"),
            ("au_size", "4M"),
            ("open_aus_linear", "6"),
            ("open_aus_random", "24"),
            ("fat_area_aus", "2"),
            ("page_read_ns", "50000"),
            ("page_program_ns", "400000"),
            ("au_erase_ns", "3000000"),
            ("random_write_ns", "150000"),
            ("card_access_ns", "60000"),
            ("cid", "035344534333324780a1b2c3d4016500"),
            ("csd", "400e00325b590000edc87f800a400000"),
            ("scr", "0235848300000000"),
            (
                "ssr",
                "8000000000000000040090000000190a000000000001000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
            ),
        ],
    },
    Preset {
        name: "kingston-sa04g",
        summary: "Kingston SA04G 4 GB microSDHC (2013): 4 MiB AU, 3 open AUs",
        source: "Andrew Bradford's blog post \"Flashbenching\" (May 2014); registers from calibration/mmc_registers.csv",
        settings: &[
            ("host", "am335x-hsmmc"),
            ("capacity", "3904897024"),
            ("page_size", "16k"),
            ("au_size", "4M"),
            ("open_aus_linear", "3"),
            ("open_aus_random", "3"),
            ("fat_area_aus", "0"),
            ("page_read_ns", "580000"),
            ("page_program_ns", "3011000"),
            // Bradford's Flashbenching --find-fat rows from 2 MiB to 16 KiB
            // (calibration/kingston_sa04g_find_fat.csv) write AU 0 at 0.73-0.88
            // and AU 1 at 0.83-0.98 of the speed of AUs 3-5: 27% and 12% more
            // program time there put every one of those cells within 9%.
            ("lead_program_ns", "3830000;3380000"),
            ("copy_page_ns", "2900000"),
            ("au_erase_ns", "4000000"),
            ("au_cross_read_ns", "100000"),
            ("random_write_ns", "3000000"),
            // Bradford's Flashbenching --open-au --random rows from 16 KiB to 512 KiB cost
            // about one page copy (2.9 ms) more per page than the fixed
            // penalty gives: the card writes random-mode pages twice.
            ("random_page_ns", "2900000"),
            ("tail_log_open", "true"),
            ("card_access_ns", "300000"),
            ("random_read_ns", "699000"),
            // Bradford's Flashbenching -a rows below the 16 KiB page show a
            // step of 11.8, 14.6 and 19 us at 2, 4 and 8 KiB
            // (calibration/kingston_sa04g_align.csv): a 1 KiB read across a
            // 2 KiB boundary moves a second codeword of 1 or 2 KiB (of 512
            // bytes it would not), at 13 us each (2 and 4 KiB within 11%).
            ("codeword_size", "1k"),
            ("codeword_read_ns", "13000"),
            ("write_commit_ns", "656000"),
            ("cid", "02544d5341303447113533890900d371"),
            ("csd", "400e00325b5900001d177f800a40008d"),
            ("scr", "0235800001000000"),
        ],
    },
    Preset {
        name: "sandisk-512mb",
        summary: "SanDisk 512 MB SD (c. 2006): 16 KiB erase block",
        source: "FreeBSD PR arm/155214 (Ian Lepore on freebsd-arm, March 2011), 'erase_blocks=32'",
        settings: &[
            ("host", "at91-mci"),
            ("capacity", "507510784"),
            ("page_size", "512"),
            ("au_size", "16k"),
            ("open_aus_linear", "2"),
            ("open_aus_random", "1"),
            ("page_read_ns", "9000"),
            ("page_program_ns", "250000"),
            ("au_erase_ns", "1000000"),
            ("card_access_ns", "90000"),
            ("write_commit_ns", "475000"),
        ],
    },
    Preset {
        name: "sandisk-2gb",
        summary: "SanDisk 2 GB SD (2011): 8192-block (4 MiB) erase block",
        source: "FreeBSD PR arm/155214 (Ian Lepore on freebsd-arm, March 2011), 'erase_blocks=8192'",
        settings: &[
            ("host", "at91-mci"),
            ("capacity", "1977614336"),
            ("page_size", "8k"),
            ("au_size", "4M"),
            ("open_aus_linear", "2"),
            ("open_aus_random", "1"),
            ("page_read_ns", "139000"),
            ("page_program_ns", "2211000"),
            ("au_erase_ns", "3000000"),
            ("card_access_ns", "280000"),
            ("write_commit_ns", "6708000"),
            ("partial_page_write_ns", "11300000"),
            ("csd", "002600325f5a83aefefbcfff928040de"),
        ],
    },
    Preset {
        name: "toshiba-7au",
        summary: "Toshiba eMMC/SD: 7 open AUs, slow writes under 32 KiB",
        source: "Arnd Bergmann's post 'MMC quirks relating to performance/lifetime' (linaro-dev, February 2011)",
        settings: &[
            ("host", "generic"),
            ("card_type", "MMC"),
            ("capacity", "7818182656"),
            ("page_size", "32k"),
            ("au_size", "4M"),
            ("open_aus_linear", "7"),
            ("open_aus_random", "7"),
            ("page_read_ns", "80000"),
            ("page_program_ns", "2050000"),
            ("start_program_ns", "5300000"),
            ("copy_page_ns", "2300000"),
        ],
    },
    Preset {
        name: "sandisk-20au",
        summary: "SanDisk eMMC/SD part keeping 20 AUs open",
        source: "Arnd Bergmann's post 'MMC quirks relating to performance/lifetime' (linaro-dev, February 2011)",
        settings: &[
            ("host", "generic"),
            ("card_type", "MMC"),
            ("capacity", "7818182656"),
            ("page_size", "16k"),
            ("au_size", "4M"),
            ("open_aus_linear", "20"),
            ("open_aus_random", "20"),
            ("page_read_ns", "60000"),
            ("page_program_ns", "1365000"),
            ("copy_page_ns", "2060000"),
            ("write_commit_ns", "5300000"),
        ],
    },
    Preset {
        name: "emmc-hs400",
        summary: "eMMC HBG4a2 29.1 GiB in HS400 enhanced strobe",
        source: "Baolin Wang's patch series 'Add MMC software queue support' v5 (linux-mmc, October 2019)",
        settings: &[
            ("host", "sdhci-hs400"),
            ("card_type", "MMC"),
            ("capacity", "31268536320"),
            ("page_size", "4k"),
            ("au_size", "8M"),
            ("open_aus_linear", "8"),
            ("open_aus_random", "8"),
            ("page_mapped", "true"),
            // 29.1 GiB offered from what is taken to be 32 GiB of NAND (a
            // power-of-two die stack): 1 - 31268536320 / 2^35 = 0.09 spare.
            ("spare", "0.09"),
            ("page_read_ns", "25900"),
            ("page_program_ns", "400"),
            ("card_access_ns", "20000"),
            ("random_read_ns", "79000"),
            ("random_write_ns", "46600"),
        ],
    },
    Preset {
        name: "cf-sandisk-ultra2",
        summary: "SanDisk Ultra II CompactFlash in PIO mode",
        source: "Artem Belevich's post 'CompactFlash performance improvement' (NetBSD tech-kern, March 2004)",
        settings: &[
            ("host", "netbsd-ata-pio"),
            ("card_type", "CF"),
            ("capacity", "512483328"),
            ("page_size", "2k"),
            ("au_size", "128k"),
            ("open_aus_linear", "2"),
            ("open_aus_random", "1"),
            ("card_access_ns", "0"),
            ("ata_cmd_to_data_ns", "3000"),
            ("page_read_ns", "20000"),
            ("page_program_ns", "160000"),
            ("au_erase_ns", "1500000"),
        ],
    },
    Preset {
        name: "cf-simpletech-oem",
        summary: "SimpleTech/OEM CompactFlash, PIO: ~3 ms a sector written",
        source: "Artem Belevich's post \"CompactFlash performance improvement\" (NetBSD tech-kern, March 2004), calibration/cf_ata_timeline.csv",
        settings: &[
            ("host", "netbsd-ata-pio"),
            ("card_type", "CF"),
            ("capacity", "256901120"),
            ("page_size", "2k"),
            ("au_size", "16k"),
            ("open_aus_linear", "1"),
            ("open_aus_random", "1"),
            // Belevich's PIO timeline reads a sector a command in 570 us
            // (calibration/cf_ata_timeline.csv): 36 us over the bus and
            // page times, the card's own per command.
            ("card_access_ns", "36000"),
            ("ata_cmd_to_data_ns", "251000"),
            ("wake_ns", "1000000"),
            ("page_read_ns", "30000"),
            ("page_program_ns", "589000"),
            ("partial_page_write_ns", "1829000"),
            ("au_erase_ns", "100000"),
        ],
    },
];

pub fn profile(name: &str) -> Option<&'static Preset> {
    PROFILES.iter().find(|p| p.name == name)
}

/// Build the parameters of a built-in profile.
pub fn build(name: &str) -> Result<Params, ParamError> {
    let prof = profile(name).ok_or_else(|| {
        ParamError::UnknownProfile(
            name.to_string(),
            crate::console::did_you_mean(name, PROFILES.iter().map(|p| p.name)),
        )
    })?;
    let mut p = Params::default();
    for (k, v) in prof.settings {
        p.set(k, v)?;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_is_valid_and_cited() {
        for prof in PROFILES {
            let p = build(prof.name).unwrap_or_else(|e| panic!("{}: {e}", prof.name));
            p.validate().unwrap_or_else(|e| panic!("{}: {e}", prof.name));
            assert!(!prof.source.is_empty());
        }
        for h in super::super::hosts::HOSTS {
            let mut p = Params::default();
            p.set("host", h.name).unwrap();
            p.validate().unwrap_or_else(|e| panic!("{}: {e}", h.name));
        }
    }

    #[test]
    fn kingston_matches_the_seed() {
        let p = build("kingston-sa04g").unwrap();
        assert_eq!(p.capacity, 3_904_897_024);
        assert_eq!(p.au_size, 4 << 20);
        assert_eq!(p.page_size, 16 << 10);
        assert_eq!(p.open_aus_linear, 3);
        assert_eq!(p.fat_area_aus, 0);
        let hsq = {
            let mut p = build("emmc-hs400").unwrap();
            p.set("host", "sdhci-hs400-hsq").unwrap();
            p
        };
        assert_eq!(
            (hsq.queue_depth, hsq.in_flight, hsq.bus_width, hsq.ddr),
            (32, 2, 8, true)
        );
    }
}
