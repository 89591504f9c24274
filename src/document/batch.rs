//! `batch`: many devices, one table. The `batch` key of the JSON contract,
//! and the tag each device's own stored run carries.

use serde::{Deserialize, Serialize};

use crate::identify::slot::{Place, UsbIds};
use crate::measure::Results;

/// `batch`'s body: `{"batch": {...}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchBody {
    pub batch: Batch,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Batch {
    /// This batch's id: its stored runs carry it (`results list --batch`).
    pub id: String,
    pub rows: Vec<Row>,
    /// The figures the outlier rule compared against: the batch's medians.
    pub medians: Medians,
    /// Wall time of the whole batch.
    pub wall_s: f64,
}

/// The batch's medians over the rows that measured them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Medians {
    pub read_mb_s: Option<f64>,
    pub write_mb_s: Option<f64>,
}

/// One device's row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// Where it is plugged: the port path, or the device's name where
    /// there is no port.
    pub slot: String,
    /// The path it was tested through.
    pub device: String,
    pub identity: Identity,
    #[serde(default)]
    pub label: Option<String>,
    /// The bus it shares (see [`Place`]).
    pub bus: String,
    pub announced_bytes: u64,
    pub usable_bytes: Option<u64>,
    /// "wrap", "drop", "cache", "chain": the capacity check's kind of fake.
    pub fake_kind: Option<crate::measure::capacity::FakeKind>,
    pub verdict: RowVerdict,
    /// The rule that decided, in words.
    pub why: String,
    /// Sequential 1 MiB read and write, MB/s (bench's quick preset).
    pub read_mb_s: Option<f64>,
    pub write_mb_s: Option<f64>,
    /// The SD classes bench's figures met ("A1-style").
    #[serde(default)]
    pub classes: Vec<String>,
    /// The class the card claims and where the claim came from.
    #[serde(default)]
    pub claims: Option<String>,
    /// What ran on other devices while this one's speed was measured.
    #[serde(default)]
    pub beside: Vec<String>,
    /// Wall seconds its speed steps held its bus alone.
    #[serde(default)]
    pub speed_s: f64,
    /// Its run in the results store.
    #[serde(default)]
    pub run_id: Option<i64>,
    /// Wall seconds from the batch's start to this row's end.
    pub ended_s: f64,
    /// What an earlier run of this card (pulled mid-test, or stopped by a
    /// crash) left in its journal, put back before its tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<String>,
    /// The earlier row whose card held the same content (its slot): the
    /// same card moved to another slot, or a copy of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_content_as: Option<String>,
    /// The full write-and-verify of every block (`--destructive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<crate::measure::capacity::fill::FillResult>,
    /// Each test's result under its usual key.
    pub results: Results,
}

/// The verdict of a row, as the contract spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowVerdict {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
    #[serde(rename = "SUSPECT")]
    Suspect,
    #[serde(rename = "removed")]
    Removed,
    #[serde(rename = "skipped")]
    Skipped,
}

impl RowVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            RowVerdict::Pass => "PASS",
            RowVerdict::Fail => "FAIL",
            RowVerdict::Suspect => "SUSPECT",
            RowVerdict::Removed => "removed",
            RowVerdict::Skipped => "skipped",
        }
    }
}

/// Who a device is, from everything it says: the card's CID where the
/// host is native, else the USB reader's ids with the port (readers of
/// one model repeat their serial), else what the disk reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// Equal only for the same card in the same place (or the same CID).
    pub key: String,
    /// For people: "Kingston SA04G, 3.64 GiB (mmc; serial 0x...)".
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usb: Option<UsbIds>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lun: Option<u32>,
    /// What the card holds, read before any test wrote: the same in
    /// another slot for the same card moved (or a copy of it). None for a
    /// blank card, whose blocks say nothing of which it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl Identity {
    /// From identification and the device's place.
    pub fn of(info: &crate::identify::DeviceInfo, spec: &str) -> Identity {
        let id = super::DeviceId::of_info(info, spec);
        let place = info.place.clone().unwrap_or_default();
        let regs = info.mmc.as_ref().map(|m| &m.raw_hex);
        let cid = regs.and_then(|r| r.get("cid")).cloned();
        let key = match (&cid, &place.usb) {
            (Some(_), _) => id.key.clone(),
            (None, Some(u)) => format!(
                "usb:{}:{}:{}@{}{}:{}",
                u.vendor,
                u.product,
                u.serial.as_deref().unwrap_or("-"),
                place.port.as_deref().unwrap_or("-"),
                place.lun.map(|l| format!("/{l}")).unwrap_or_default(),
                info.size_bytes
            ),
            (None, None) => id.key.clone(),
        };
        let Place { port, lun, usb, .. } = place;
        Identity {
            key,
            name: id.name,
            csd: regs.and_then(|r| r.get("csd")).cloned(),
            cid,
            usb,
            port,
            lun,
            fingerprint: None,
        }
    }
}

/// What a device's own stored run says of its batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchTag {
    pub id: String,
    pub slot: String,
    #[serde(default)]
    pub label: Option<String>,
    pub bus: String,
}
