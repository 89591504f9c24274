//! `flashlab decode cid|csd|scr|ssr HEX [--mmc]`.

use serde::Serialize;

use super::usage_err;
use crate::error::CliResult;
use crate::output::{json, table};
use crate::registers::{self, Decoded, Family, RegisterKind};

#[derive(Serialize)]
struct Body<'a> {
    register: &'a str,
    #[serde(flatten)]
    decoded: &'a Decoded,
}

pub fn run(kind: RegisterKind, hex: &str, mmc: bool, as_json: bool) -> CliResult<()> {
    let family = if mmc { Family::Mmc } else { Family::Sd };
    let decoded = registers::decode(kind, family, hex).map_err(|e| {
        usage_err(
            format!("cannot decode {}: {e}", kind.name()),
            "paste the register as sysfs shows it (e.g. `cat /sys/block/mmcblk0/device/cid`); --mmc selects the MMC/eMMC layout for CID/CSD",
        )
    })?;
    let name = kind.name().to_ascii_lowercase();
    if as_json {
        json::print(&json::Envelope {
            schema_version: json::SCHEMA_VERSION,
            command: "decode",
            target: None,
            device_time_s: None,
            body: Body {
                register: &name,
                decoded: &decoded,
            },
        });
    } else {
        crate::outln!("{} ({})", kind.name(), if mmc { "MMC layout" } else { "SD layout" });
        crate::outln!(
            "{}",
            table::json_fields(&serde_json::to_value(&decoded).expect("serialisable"))
        );
    }
    Ok(())
}
