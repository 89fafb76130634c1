//! The device's configuration (address, MAC), read from the blob `linklab emu` has QEMU's
//! loader put in RAM.

use linklab_perf::device_config::{ConfigError, DeviceConfig, CONFIG_LEN};

use crate::Board;

/// Reads the configuration blob at `addr` (placed there by `linklab emu` through QEMU's
/// loader) with volatile reads, so the compiler cannot assume the RAM is still zero.
///
/// # Safety
/// `addr..addr + CONFIG_LEN` must be readable memory.
pub unsafe fn read_config(addr: usize) -> Result<DeviceConfig, ConfigError> {
    let mut blob = [0u8; CONFIG_LEN];
    for (i, b) in blob.iter_mut().enumerate() {
        // SAFETY: the caller guarantees the range is readable.
        *b = unsafe { core::ptr::read_volatile((addr + i) as *const u8) };
    }
    DeviceConfig::parse(&blob)
}

/// What is wrong with the configuration blob, for the console.
pub(crate) fn config_problem(e: ConfigError) -> &'static str {
    match e {
        ConfigError::NoBlob => "no config blob",
        ConfigError::Version(_) => "config blob of an unknown version",
        ConfigError::Crc => "config blob with a bad CRC",
        ConfigError::Invalid => "config blob with an invalid prefix or MAC",
    }
}

/// The configuration at `addr`, or the default with a console line saying why.
///
/// # Safety
/// As [`read_config`].
pub unsafe fn config_or_default<B: Board>(board: &mut B, addr: usize) -> DeviceConfig {
    // SAFETY: forwarded from the caller.
    match unsafe { read_config(addr) } {
        Ok(c) => c,
        Err(e) => {
            board.console("linklab firmware: ");
            board.console(config_problem(e));
            board.console(", using 198.18.0.2/24\n");
            DeviceConfig::DEFAULT
        }
    }
}
