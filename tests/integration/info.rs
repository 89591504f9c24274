//! `flashlab info` on regular files and loop devices, values checked against what
//! the test created.

use predicates::prelude::*;

use crate::support::{LoopDevice, Mounted, flashlab, json, random_file, require_loop_devices};

#[test]
fn info_on_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "card.img", 3 << 20, 1);
    let v = json(&["info", f.to_str().unwrap()]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["command"], "info");
    assert_eq!(v["target"]["kind"], "file");
    assert_eq!(v["target"]["spec"], f.to_str().unwrap());
    assert_eq!(v["target"]["size_bytes"], 3 << 20);
    assert_eq!(v["device_time_s"], 0.0);
    assert_eq!(v["info"]["transport"], "file");
    assert_eq!(v["info"]["size_bytes"], 3 << 20);
    assert_eq!(v["info"]["size_iec"], "3 MiB");
    assert_eq!(v["info"]["capacity_hint"]["exponent"], 20);
    assert_eq!(v["info"]["capacity_hint"]["odd_part"], 3);
    assert_eq!(v["info"]["mounted"], false);
    assert_eq!(v["info"]["mmc"], serde_json::Value::Null);
    let lbs = v["target"]["logical_block_size"].as_u64().unwrap();
    assert!(lbs.is_power_of_two() && (512..=4096).contains(&lbs), "{lbs}");
}

#[test]
fn info_text_names_the_size_and_factorisation() {
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "card.img", 3 << 20, 1);
    flashlab()
        .args(["info", f.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("3145728 bytes (3 MiB) = 2^20 x 3"));
}

#[test]
fn refusals_exit_2_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    flashlab()
        .args(["info", missing.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("error:")
                .and(predicate::str::contains("no such file"))
                .and(predicate::str::contains("hint:")),
        );
    let empty = dir.path().join("empty.img");
    std::fs::write(&empty, b"").unwrap();
    flashlab()
        .args(["info", empty.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("size is zero"));
    flashlab()
        .args(["info", dir.path().to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a block device or regular file"));
    flashlab()
        .args(["info", "/dev/null"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a block device or regular file"));
    flashlab()
        .args(["info", "sim:"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad target"));
    flashlab().args(["info", "--bogus"]).assert().code(2);
    // --json answers a failure with one error document on stdout.
    let out = flashlab()
        .args(["info", missing.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let v = crate::support::document(&out, 2, "info of a missing path");
    assert_eq!(v["command"], "info");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["error"]["kind"], "usage");
    assert!(v["error"]["message"].as_str().unwrap().contains("no such file"), "{v}");
    assert!(v["error"]["hint"].as_str().unwrap().contains("lsblk"), "{v}");
}

#[test]
fn permission_denied_suggests_sudo() {
    if rustix::process::geteuid().is_root() {
        // Root reads mode-000 files; drop to nobody for this one check if we can.
        let dir = tempfile::tempdir().unwrap();
        let f = random_file(dir.path(), "secret.img", 1 << 20, 2);
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let bin = assert_cmd::cargo::cargo_bin("flashlab");
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(["info", f.to_str().unwrap()])
            .output();
        let Ok(out) = out else {
            crate::support::skip("setpriv unavailable");
            return;
        };
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("permission denied") && err.contains("sudo"), "{err}");
    } else {
        let dir = tempfile::tempdir().unwrap();
        let f = random_file(dir.path(), "secret.img", 1 << 20, 2);
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        flashlab()
            .args(["info", f.to_str().unwrap()])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("sudo"));
    }
}

#[test]
fn info_on_loop_devices_reports_what_losetup_was_given() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    for (sector, size) in [(None, 6u64 << 20), (Some(4096u32), 12u64 << 20)] {
        let f = random_file(dir.path(), &format!("loop{size}.img"), size as usize, 3);
        let dev = LoopDevice::attach(&f, sector);
        let v = json(&["info", dev.as_str()]);
        let lbs = u64::from(sector.unwrap_or(512));
        assert_eq!(v["target"]["kind"], "block");
        assert_eq!(v["target"]["size_bytes"], size);
        assert_eq!(v["target"]["logical_block_size"], lbs);
        assert_eq!(v["info"]["logical_block_size"], lbs);
        assert_eq!(v["info"]["transport"], "loop");
        assert_eq!(v["info"]["loop_backing_file"], f.to_str().unwrap());
        assert_eq!(v["info"]["mounted"], false);
        assert_eq!(v["info"]["in_use"], false, "{}", v["info"]["in_use_by"]);
        let name = dev.path.file_name().unwrap().to_str().unwrap();
        let rot = std::fs::read_to_string(format!("/sys/block/{name}/queue/rotational")).unwrap();
        assert_eq!(v["info"]["rotational"], rot.trim() == "1");
        assert!(v["info"]["physical_block_size"].as_u64().unwrap() >= lbs);
    }
}

#[test]
fn info_sees_a_mounted_loop_device() {
    require_loop_devices!();
    let dir = tempfile::tempdir().unwrap();
    let f = random_file(dir.path(), "fs.img", 16 << 20, 4);
    let dev = LoopDevice::attach(&f, None);
    let mnt = Mounted::ext4(&dev.path, &dir.path().join("mnt"));
    let v = json(&["info", dev.as_str()]);
    assert_eq!(v["info"]["mounted"], true);
    assert_eq!(v["info"]["in_use"], true);
    assert_eq!(v["info"]["mounts"][0]["fstype"], "ext4");
    assert_eq!(v["info"]["mounts"][0]["mount_point"], mnt.dir.to_str().unwrap());
    drop(mnt);
    let v = json(&["info", dev.as_str()]);
    assert_eq!(v["info"]["mounted"], false);
    assert_eq!(v["info"]["in_use"], false);
}
