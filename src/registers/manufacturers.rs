//! Manufacturer ids. Neither the SD Association nor JEDEC publishes the SD/MMC MID
//! assignments; these are the ids collected by the community in mmc-utils'
//! `lsmmc.c` database (kernel.org utils/mmc/mmc-utils), which Linux developers use.
//! A name is a hint, not proof: counterfeit cards copy ids freely.

/// The manufacturer usually behind an SD card MID.
pub fn sd_name(mid: u8) -> Option<&'static str> {
    Some(match mid {
        0x01 => "Panasonic",
        0x02 => "Toshiba/Kingston/Viking",
        0x03 => "SanDisk",
        0x08 => "Silicon Power",
        0x18 => "Infineon",
        0x1b => "Samsung/Transcend",
        0x1c => "Transcend",
        0x1d => "Corsair/AData",
        0x1e => "Transcend",
        0x1f => "Kingston",
        0x27 => "Phison/Delkin",
        0x28 => "Lexar",
        0x30 => "SanDisk",
        0x31 => "Silicon Power",
        0x33 => "STMicroelectronics",
        0x41 => "Kingston",
        0x6f => "STMicroelectronics",
        0x74 => "Transcend",
        0x76 => "Patriot",
        0x82 => "Sony/Gobe",
        0x9e => "PNY",
        _ => return None,
    })
}

/// The manufacturer usually behind an MMC/eMMC MID.
pub fn mmc_name(mid: u8) -> Option<&'static str> {
    Some(match mid {
        0x00 => "SanDisk",
        0x02 => "Kingston/SanDisk",
        0x03 => "Toshiba",
        0x11 => "Toshiba/Kioxia",
        0x13 => "Micron",
        0x15 => "Samsung",
        0x2c => "Kingston",
        0x37 => "KingMax",
        0x44 => "SanDisk",
        0x45 => "SanDisk",
        0x70 => "Kingston",
        0x88 => "Foresee/Longsys",
        0x90 => "SK hynix",
        0xfe => "Micron",
        _ => return None,
    })
}
