//! `flashlab decode` through the binary: every contract field of the reference
//! vectors, and bad input.

use predicates::prelude::*;

use crate::support::{flashlab, json};

#[test]
fn kingston_cid_contract_fields() {
    // calibration/mmc_registers.csv (Bradford, Flashbenching; docs/SOURCES.md).
    let v = json(&["decode", "cid", "02544d5341303447113533890900d371"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["command"], "decode");
    assert_eq!(v["register"], "cid");
    assert_eq!(v["manufacturer_id"], 2);
    assert_eq!(v["oem_id"], "TM");
    assert_eq!(v["product_name"], "SA04G");
    assert_eq!(v["product_revision"], "1.1");
    assert_eq!(v["serial"], 0x3533_8909u32);
    assert_eq!(v["manufacture_year"], 2013);
    assert_eq!(v["manufacture_month"], 3);
}

#[test]
fn kingston_csd_contract_fields() {
    let v = json(&["decode", "csd", "400e00325b5900001d177f800a40008d"]);
    assert_eq!(v["csd_structure"], 1);
    assert_eq!(v["taac"], 0x0e);
    assert_eq!(v["nsac"], 0);
    assert_eq!(v["tran_speed"], 0x32);
    assert_eq!(v["ccc"], 0x5b5);
    assert_eq!(v["read_bl_len"], 9);
    assert_eq!(v["c_size"], 7447);
    assert_eq!(v["c_size_mult"], serde_json::Value::Null);
    assert_eq!(v["sector_size"], 0x7f);
    assert_eq!(v["capacity_bytes"], 3_904_897_024u64);
}

#[test]
fn v1_csd_and_word_format_input() {
    // embedded-sdmmc-rs test_csdv1, pasted as 32-bit words the way U-Boot prints them.
    let v = json(&["decode", "csd", "0x007f0032", "0x5b5a83af", "0x7fffcf80", "0x1680006f"]);
    assert_eq!(v["csd_structure"], 0);
    assert_eq!(v["c_size"], 3773);
    assert_eq!(v["c_size_mult"], 7);
    assert_eq!(v["read_bl_len"], 10);
    assert_eq!(v["capacity_bytes"], 1_978_662_912u64);
}

#[test]
fn scr_and_ssr() {
    let v = json(&["decode", "scr", "02 35 80 00 01 00 00 00"]);
    assert_eq!(v["spec_version"], "3.0x");
    assert_eq!(v["bus_widths"], serde_json::json!([1, 4]));
    let mut ssr = [0u8; 64];
    ssr[0] = 0x80; // 4-bit bus
    ssr[8] = 0x04; // SPEED_CLASS 4 -> class 10
    ssr[10] = 0x90; // AU_SIZE 9 -> 4 MiB
    ssr[21] = 0x01; // APP_PERF_CLASS 1 -> A1 (bits [339:336])
    let hex: String = ssr.iter().map(|b| format!("{b:02x}")).collect();
    let v = json(&["decode", "ssr", &hex]);
    assert_eq!(v["bus_width"], 4);
    assert_eq!(v["speed_class"], 10);
    assert_eq!(v["au_size_bytes"], 4 << 20);
    assert_eq!(v["app_perf_class"], "A1");
}

#[test]
fn mmc_layout() {
    // QEMU's emulated eMMC CID (hw/sd/sd.c emmc_set_cid), CRC byte computed.
    let mut b = [
        0xaau8, 0x01, b'X', b'Q', b'E', b'M', b'U', b'!', b'!', 0x01, 0xde, 0xad, 0xbe, 0xef, 0x29, 0,
    ];
    b[15] = (flashlab::registers::bits::crc7(&b[..15]) << 1) | 1;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let v = json(&["decode", "cid", &hex, "--mmc"]);
    assert_eq!(v["family"], "mmc");
    assert_eq!(v["product_name"], "QEMU!!");
    assert_eq!(v["serial"], 0xdead_beefu32);
    assert_eq!(v["manufacture_month"], 2);
    assert_eq!(v["crc_ok"], true);
    flashlab()
        .args(["decode", "scr", "0235800001000000", "--mmc"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("SD-only"));
}

#[test]
fn non_printable_names_are_escaped() {
    let v = json(&["decode", "cid", "02544d00ff303447113533890900d371"]);
    assert_eq!(v["product_name"], "\\x00\\xff04G");
    assert_eq!(v["crc_ok"], false);
}

#[test]
fn bad_hex_exits_2() {
    for bad in ["xyz", "0235", "02544d5341303447113533890900d37", ""] {
        flashlab()
            .args(["decode", "cid", bad])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("error: cannot decode CID"))
            .stdout(predicate::str::is_empty());
    }
    flashlab().args(["decode", "ocr", "00"]).assert().code(2);
}
