//! The counted profiles' data files: each parses, names the profile, the image and the
//! command that writes it, its counts are sane and every transfer's residual is within the
//! tolerance of the solution, and — failing, not warning — it is fresh: the fingerprint of
//! the sources it was counted from still matches (when it does not, the firmware, its
//! driver, the MAC or the apps changed since the counts were taken: run the printed command
//! as root from the repository root and commit the new file).

use std::path::Path;

use linklab_sim::counts::{fingerprint, CountedProfile, LoopShape, PROFILES};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/linklab-sim sits two levels below the root")
}

#[test]
fn every_data_file_parses_and_its_counts_are_sane() {
    for (name, path, _) in PROFILES {
        let m = CountedProfile::compiled_in(name).expect("listed");
        assert_eq!(m.profile, name, "{path}");
        assert_eq!(m.icount, "shift=0", "{path}");
        assert!(
            m.command
                .starts_with(&format!("linklab emu parts {} ", m.board))
                && m.command.ends_with(&format!("--json {path}")),
            "{path}: {}",
            m.command
        );
        assert!(!m.sources.is_empty(), "{path}");
        let p = m.parts;
        // Every per-frame and per-pass part costs something; no per-byte part is negative
        // beyond the solution's rounding (a part the NIC does is ~0), and none is more than a
        // 1 MHz core could spend keeping up with 10 Mbit/s.
        for (part, v) in [
            ("isr_per_rx_frame", p.isr_per_rx_frame),
            ("main_per_pass", p.main_per_pass),
            ("main_per_rx_frame", p.main_per_rx_frame),
            ("main_per_tx_frame", p.main_per_tx_frame),
        ] {
            assert!(v > 0.0 && v < 1e6, "{path}: {part} = {v}");
        }
        for (part, v) in [
            ("isr_per_rx_byte", p.isr_per_rx_byte),
            ("isr_per_tx_frame", p.isr_per_tx_frame),
            ("main_per_rx_byte", p.main_per_rx_byte),
            ("main_per_misaligned_byte", p.main_per_misaligned_byte),
            ("main_per_tx_byte", p.main_per_tx_byte),
            ("http_per_tx_byte", p.http_per_tx_byte),
        ] {
            assert!(v > -0.05 && v < 800.0, "{path}: {part} = {v}");
        }
        // The solution is within 15 % of every transfer's main-loop count and 20 % of its
        // interrupt count (the file keeps each residual): the linear parts describe the
        // transfers they were solved from. An interrupt count further off passes only where
        // it moves the transfer's whole count by under 5 %: a NIC that DMAs into a ring takes
        // every frame the ring holds per interrupt (sabrelite's ENET: ~320 instructions per
        // frame while the host streams, ~560 per ACK when the device sends), which a cost
        // per frame cannot describe, and its interrupt is under a tenth of the device's work.
        let runs = m.runs.as_array().expect("runs is an array");
        assert!(runs.len() >= 8, "{path}: {} runs", runs.len());
        for r in runs {
            let main_e = r["main_fit_error_pct"].as_f64().expect("residual present");
            assert!(
                main_e.abs() < 15.0,
                "{path}: main_fit_error_pct = {main_e} in {r}"
            );
            let isr_e = r["isr_fit_error_pct"].as_f64().expect("residual present");
            let (isr, main) = (r["isr"].as_f64().unwrap(), r["main"].as_f64().unwrap());
            let on_total = isr_e.abs() * isr / (isr + main);
            assert!(
                isr_e.abs() < 20.0 || on_total < 5.0,
                "{path}: isr_fit_error_pct = {isr_e} ({on_total:.1} % of the whole count) in {r}"
            );
        }
        // The device as captured: the window it advertised fits its socket buffer, and
        // something was in flight each way.
        let d = m.device;
        assert!(d.rx_queue_frames >= 2, "{path}");
        assert!(
            d.advertised_window > 0 && d.advertised_window <= d.tcp_window,
            "{path}: {d:?}"
        );
        assert!(
            d.iperf3_send_buffer >= 536 && d.http_send_buffer >= 536,
            "{path}: {d:?}"
        );
        assert_eq!(
            d.shape == LoopShape::Executor,
            m.image == "embassy",
            "{path}"
        );
        match &m.decoder {
            Some(dec) => {
                assert_eq!(m.image, "soft-phy", "{path}");
                assert!(dec.per_bit(dec.image_oversample).is_some(), "{path}");
            }
            None => assert_ne!(m.image, "soft-phy", "{path}"),
        }
    }
}

#[test]
fn every_data_file_is_fresh_against_the_sources_it_was_counted_from() {
    let mut stale = Vec::new();
    for (name, path, _) in PROFILES {
        let m = CountedProfile::compiled_in(name).expect("listed");
        let now = fingerprint(root(), &m.sources).unwrap_or_else(|e| {
            panic!(
                "{path}: a source it lists is gone ({e}); refresh it: {}",
                m.command
            )
        });
        // The fingerprint is a function of the files: recomputing it gives the same.
        assert_eq!(fingerprint(root(), &m.sources).unwrap(), now);
        if now != m.fingerprint {
            stale.push(format!(
                "{path} is stale: its sources' fingerprint is {now}, the counts were taken at {}; refresh it (as root, from the repository root): {}",
                m.fingerprint, m.command
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "\n{}\nor refresh every profile at once: scripts/refresh-profiles (as root), then commit crates/linklab-sim/data/",
        stale.join("\n")
    );
}
