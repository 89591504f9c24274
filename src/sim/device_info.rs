//! A simulated card as `info` and `probe` show it: its geometry, and its
//! registers decoded exactly as a real card's sysfs would give them.

use super::SimTarget;
use crate::identify::DeviceInfo;
use crate::identify::mmc::{MmcInfo, MmcRaw, kernel_preferred_erase};
use crate::targets::Target;
use crate::units::Iec;

/// What `info` shows for a simulated card: its geometry, and its registers
/// decoded exactly as a real card's sysfs would be.
impl SimTarget {
    pub fn device_info(&self) -> DeviceInfo {
        let p = &self.params;
        let d = self.description();
        let mut info = DeviceInfo::new(
            &d.spec,
            d.size_bytes,
            u64::from(d.logical_block_size),
            u64::from(d.physical_block_size),
            crate::identify::Transport::Sim,
        );
        info.reported.model = Some(
            d.spec
                .trim_start_matches("sim:")
                .split(',')
                .next()
                .unwrap_or_default()
                .to_string(),
        );
        info.reported.vendor = Some("flashlab simulator".into());
        info.reported.rotational = Some(false);
        let ftl = if p.page_mapped {
            "page-mapped FTL (no open-AU limit)".to_string()
        } else {
            format!("{} open AUs in order / {} random", p.open_aus_linear, p.open_aus_random)
        };
        info.notes.push(format!(
            "simulated card: {} AU, {} page, {ftl}, host {}",
            Iec(p.au_size),
            Iec(p.page_size),
            p.host
        ));
        if p.card_type != "CF" {
            let reg = |h: &Option<String>, n: usize| {
                h.as_deref()
                    .and_then(|h| crate::registers::hex::parse_register(h, "register", n).ok())
            };
            let ssr: Option<[u8; 64]> = reg(&p.ssr, 64).and_then(|b| b.try_into().ok());
            let sector = u64::from(p.sector_size);
            let raw = MmcRaw {
                card_type: p.card_type.clone(),
                cid: reg(&p.cid, 16).and_then(|b| b.try_into().ok()),
                csd: reg(&p.csd, 16).and_then(|b| b.try_into().ok()),
                scr: reg(&p.scr, 8).and_then(|b| b.try_into().ok()),
                ssr,
                erase_size_bytes: Some(sector),
                preferred_erase_size_bytes: Some(kernel_preferred_erase(ssr.as_ref(), p.capacity, sector)),
                date: None,
            };
            if raw.cid.is_some() || raw.csd.is_some() {
                info.mmc = Some(MmcInfo::from_raw(raw, p.capacity));
            }
        }
        info
    }
}
