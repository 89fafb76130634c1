//! Fuzzes the device configuration blob parser (what firmware reads from RAM at boot): any
//! bytes either parse to a valid configuration that round-trips exactly, or are refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::device_config::{DeviceConfig, CONFIG_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(config) = DeviceConfig::parse(data) {
        assert!(config.is_valid());
        let bytes = config.to_bytes();
        assert_eq!(DeviceConfig::parse(&bytes), Ok(config));
        // Reserved bytes may differ; the fields that matter are the ones parsed back.
        assert_eq!(&bytes[..CONFIG_LEN][8..18], &data[8..18]);
    }
});
