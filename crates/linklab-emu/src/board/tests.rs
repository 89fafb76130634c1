use super::*;

#[test]
fn unknown_board_names_the_known_ones() {
    let e = Board::by_name("esp32").unwrap_err();
    assert!(
        e.contains("mps2-an385")
            && e.contains("riscv32-virt")
            && e.contains("zynq7000")
            && e.contains("sabrelite"),
        "{e}"
    );
    assert_eq!(
        Board::by_name("riscv32-virt").unwrap().qemu,
        "qemu-system-riscv32"
    );
}

#[test]
fn every_board_has_a_main_image_first_and_names_each_image_once() {
    for b in &BOARDS {
        assert_eq!(b.main_image().name, "main", "{}", b.name);
        for (n, i) in b.images.iter().enumerate() {
            assert!(
                b.images[..n].iter().all(|j| j.name != i.name),
                "{}: {} twice",
                b.name,
                i.name
            );
        }
    }
}

#[test]
fn a_missing_image_is_one_line_naming_who_has_it() {
    let mps2 = Board::by_name("mps2-an385").unwrap();
    let e = mps2.image("soft-phy").unwrap_err().to_string();
    assert_eq!(
        e,
        "--image soft-phy: mps2-an385 has no soft-phy image (riscv32-virt has one; mps2-an385's: main, embassy, serial, minimal, compact)"
    );
    let e = mps2.image("nope").unwrap_err().to_string();
    assert!(
        e.starts_with("--image nope: no board has such an image"),
        "{e}"
    );
    assert_eq!(mps2.image("minimal").unwrap().profile, Profile::Minimal);
}

#[test]
fn build_commands_are_the_ones_scripts_check_runs() {
    let check = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check"),
    )
    .unwrap();
    for b in &BOARDS {
        for i in b.images {
            let c = i.build_command(b);
            // scripts/check spells `--profile release` as `--release`.
            let spelled = c.replace("--profile release", "--release");
            assert!(check.contains(&spelled), "scripts/check lacks: {spelled}");
        }
    }
}

#[test]
fn nic_options_are_the_ones_qemu_takes() {
    let mps2 = Board::by_name("mps2-an385").unwrap();
    assert_eq!(
        mps2.tap_args("t0", None),
        [
            "-nic",
            "tap,ifname=t0,script=no,downscript=no,model=lan9118"
        ]
    );
    let virt = Board::by_name("riscv32-virt").unwrap();
    assert_eq!(
        virt.stream_args(std::path::Path::new("/tmp/s")),
        [
            "-global",
            "virtio-mmio.force-legacy=false",
            "-netdev",
            "stream,server=off,addr.type=unix,addr.path=/tmp/s,id=n0",
            "-device",
            "virtio-net-device,netdev=n0"
        ]
    );
    let zynq = Board::by_name("zynq7000").unwrap();
    assert_eq!(
        zynq.tap_args("t0", None)[1],
        "tap,ifname=t0,script=no,downscript=no,model=cadence_gem"
    );
    // The lwIP peer's image takes its address from the NIC: QEMU gives it.
    assert_eq!(
        mps2.tap_args("t0", Some("02:4c:57:00:00:02"))[1],
        "tap,ifname=t0,script=no,downscript=no,model=lan9118,mac=02:4c:57:00:00:02"
    );
    assert_eq!(
        virt.tap_args("t0", Some("02:00:00:00:00:01"))[5],
        "virtio-net-device,netdev=n0,mac=02:00:00:00:00:01"
    );
}

#[test]
fn the_pin_level_boards_are_bootable_by_name_and_no_qemu_board_has_their_names() {
    for b in &crate::pin_board::PIN_BOARDS {
        assert!(BOARDS.iter().all(|q| q.name != b.name), "{}", b.name);
        assert_eq!(Bootable::by_name(b.name), Ok(Bootable::PinLevel(*b)));
        let e = Board::by_name(b.name).unwrap_err();
        assert!(e.contains("pin level"), "{e}");
    }
    assert_eq!(
        Bootable::by_name("mps2-an385"),
        Ok(Bootable::Qemu(Board::by_name("mps2-an385").unwrap()))
    );
    assert!(Bootable::by_name("nope").unwrap_err().contains("pico"));
}
