//! Which device a run was made on, so runs of one card list together: the
//! CID where the card gives one (manufacturer, OEM, product, revision,
//! serial and date identify an SD/MMC card), else vendor, model and serial
//! from sysfs, else the target's path and size.

use serde::{Deserialize, Serialize};

use super::RunDocument;
use crate::identify::DeviceInfo;
use crate::units::Iec;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceId {
    /// Stable across runs and hosts where the card says who it is.
    pub key: String,
    /// For people: "Kingston SA04G, 3.64 GiB (mmc)".
    pub name: String,
}

impl DeviceId {
    pub fn of_info(info: &DeviceInfo, spec: &str) -> DeviceId {
        if let Some(c) = info.mmc.as_ref().and_then(|m| m.cid.as_ref()) {
            return DeviceId::of_cid(c, &format!("{}", Iec(info.size_bytes)), info.transport.as_str());
        }
        let size = Iec(info.size_bytes);
        let words: Vec<&str> = [&info.reported.vendor, &info.reported.model]
            .into_iter()
            .filter_map(|w| w.as_deref().map(str::trim).filter(|w| !w.is_empty()))
            .collect();
        let label = if words.is_empty() {
            spec.to_string()
        } else {
            words.join(" ")
        };
        match info.reported.serial.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(serial) => DeviceId {
                key: format!("serial:{label}:{serial}:{}", info.size_bytes),
                name: format!("{label}, {size} ({}; serial {serial})", info.transport),
            },
            None => DeviceId {
                key: format!("target:{spec}:{}", info.size_bytes),
                name: format!("{label}, {size} ({})", info.transport),
            },
        }
    }
}

impl DeviceId {
    /// A card by its CID: the same key whoever read it (flashlab on the
    /// card, or a CID pasted beside flashbench's output). `size` and `how`
    /// are for people ("3.64 GiB", "mmc").
    pub fn of_cid(c: &crate::registers::cid::Cid, size: &str, how: &str) -> DeviceId {
        let maker = c
            .manufacturer_name
            .clone()
            .unwrap_or_else(|| format!("manufacturer 0x{:02x}", c.manufacturer_id));
        DeviceId {
            key: format!(
                "cid:{:02x}:{}:{}:{}:{}:{}-{:02}",
                c.manufacturer_id,
                c.oem_id,
                c.product_name,
                c.product_revision,
                c.serial_hex,
                c.manufacture_year,
                c.manufacture_month
            ),
            name: format!("{maker} {}, {size} ({how}; serial {})", c.product_name, c.serial_hex),
        }
    }
}

/// The device of a stored run: its `device` key, else from `info`, else
/// the target's path and size.
pub fn of(doc: &RunDocument) -> DeviceId {
    if let Some(d) = doc.extras.device.get() {
        return d.clone();
    }
    let spec = doc.target.as_ref().map_or("", |t| t.spec.as_str());
    if let Some(info) = doc.extras.info.get() {
        return DeviceId::of_info(info, spec);
    }
    let size = doc.target.as_ref().map_or(0, |t| t.size_bytes);
    DeviceId {
        key: format!("target:{spec}:{size}"),
        name: format!("{spec}, {}", Iec(size)),
    }
}
