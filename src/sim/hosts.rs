//! Host controller presets, applied by the `host` key, each with the seed it
//! is modelled on. Plain data: [`super::params`] applies them.

/// A named set of key/value settings, with what it is and the seed it is
/// modelled on: a host preset (over a card's settings, by the `host` key)
/// or a built-in card (`profiles`, over [`Params::default`]). Here, below
/// both: the card parameters apply host presets, and the cards use them.
///
/// [`Params::default`]: super::params::Params
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    pub source: &'static str,
    pub settings: &'static [(&'static str, &'static str)],
}

/// The host controller presets, applied by the `host` key.
pub const HOSTS: &[Preset] = &[
    Preset {
        name: "generic",
        summary: "4-bit 50 MHz SD host, multi-block with CMD23",
        source: "SD spec high-speed mode defaults",
        settings: &[
            ("protocol", "mmc"),
            ("bus_width", "4"),
            ("clock_hz", "50000000"),
            ("ddr", "false"),
            ("max_blocks_per_cmd", "1024"),
            ("set_block_count", "true"),
            ("host_overhead_ns", "20000"),
            ("irq_ns", "5000"),
            ("irq_per_block", "false"),
            ("queue_depth", "1"),
            ("in_flight", "1"),
        ],
    },
    Preset {
        name: "uhs1-sdr104",
        summary: "UHS-I SDR104: 4-bit 208 MHz, CMD23, IRQ per request",
        source: "SD Physical Layer spec 3.01 bus speed modes",
        settings: &[
            ("host", "generic"),
            ("clock_hz", "208000000"),
            ("host_overhead_ns", "15000"),
        ],
    },
    Preset {
        name: "am335x-hsmmc",
        summary: "BeagleBone's AM335x omap_hsmmc: 4-bit 48 MHz, 512 KiB",
        source: "Andrew Bradford's blog post \"Flashbenching\" (May 2014) (white BeagleBone); AM335x MMCHS maximum clock",
        settings: &[
            ("host", "generic"),
            ("clock_hz", "48000000"),
            ("host_overhead_ns", "50000"),
            ("max_blocks_per_cmd", "1024"),
        ],
    },
    Preset {
        name: "at91-mci",
        summary: "Atmel AT91RM9200 at91_mci: 1-bit 30 MHz, single-block",
        source: "FreeBSD PR arm/155214 (Ian Lepore on freebsd-arm, March 2011); override bus_width=4,clock_hz=15000000 or max_blocks_per_cmd=64 for the patched driver",
        settings: &[
            ("protocol", "mmc"),
            ("bus_width", "1"),
            ("clock_hz", "30000000"),
            ("ddr", "false"),
            ("max_blocks_per_cmd", "1"),
            ("set_block_count", "false"),
            ("host_overhead_ns", "200000"),
            ("host_block_ns", "90600"),
            ("write_status_ns", "300000"),
            ("irq_ns", "60000"),
            ("irq_per_block", "false"),
            ("queue_depth", "1"),
            ("in_flight", "1"),
        ],
    },
    Preset {
        name: "sdhci-hs400",
        summary: "sdhci HS400: 8-bit 200 MHz DDR, one request at a time",
        source: "Baolin Wang's patch series \"Add MMC software queue support\" v5 (linux-mmc, October 2019), without hsq",
        settings: &[
            ("protocol", "mmc"),
            ("bus_width", "8"),
            ("clock_hz", "200000000"),
            ("ddr", "true"),
            ("max_blocks_per_cmd", "1024"),
            ("set_block_count", "true"),
            ("host_overhead_ns", "5000"),
            ("write_status_ns", "42000"),
            ("irq_ns", "3000"),
            ("irq_per_block", "false"),
            ("queue_depth", "1"),
            ("in_flight", "1"),
        ],
    },
    Preset {
        name: "sdhci-hs400-hsq",
        summary: "sdhci HS400, software queue: depth 32, 2 in flight",
        source: "Baolin Wang's patch series \"Add MMC software queue support\" v5 (linux-mmc, October 2019), with hsq",
        settings: &[("host", "sdhci-hs400"), ("queue_depth", "32"), ("in_flight", "2")],
    },
    Preset {
        name: "netbsd-ata-pio",
        summary: "NetBSD wd/ata_wdc, CF PIO: one command a sector",
        source: "Artem Belevich's post \"CompactFlash performance improvement\" (NetBSD tech-kern, March 2004), calibration/cf_ata_timeline.csv (300 us command to interrupt, 250 us PIO per sector)",
        settings: &[
            ("protocol", "ata_pio"),
            ("bus_width", "8"),
            ("clock_hz", "8000000"),
            ("ddr", "false"),
            ("max_blocks_per_cmd", "1"),
            ("set_block_count", "true"),
            ("host_overhead_ns", "20000"),
            ("irq_ns", "182000"),
            ("irq_per_block", "true"),
            ("queue_depth", "1"),
            ("in_flight", "1"),
            ("ata_pio_sector_ns", "72000"),
            ("ata_pio_write_sector_ns", "50000"),
            ("ata_next_sector_ns", "11000"),
        ],
    },
    Preset {
        name: "netbsd-ata-pio-multi",
        summary: "NetBSD wd/ata_wdc, READ/WRITE MULTIPLE: 32 sectors",
        source: "Artem Belevich's post \"CompactFlash performance improvement\" (NetBSD tech-kern, March 2004) (the ata.diff patch)",
        settings: &[
            ("host", "netbsd-ata-pio"),
            ("max_blocks_per_cmd", "32"),
            ("irq_per_block", "false"),
        ],
    },
];

pub fn find(name: &str) -> Option<&'static Preset> {
    HOSTS.iter().find(|h| h.name == name)
}
