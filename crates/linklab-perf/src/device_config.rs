//! The network configuration a device boots with, as a small fixed-size blob: the host puts
//! it at a fixed address (QEMU's `-device loader`, a flash page) so one firmware image serves
//! any address without a rebuild. Written by `linklab emu`, read by the firmware.
//!
//! Layout (little endian, [`CONFIG_LEN`] bytes):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 4 | magic `LLCF` |
//! | 4 | 1 | version (1) |
//! | 5 | 1 | IPv4 prefix length (1..=32) |
//! | 6 | 2 | reserved, zero |
//! | 8 | 4 | IPv4 address |
//! | 12 | 6 | MAC address (unicast) |
//! | 18 | 10 | reserved, zero |
//! | 28 | 4 | CRC-32 (IEEE) of bytes 0..28 |

/// Size of the blob in bytes.
pub const CONFIG_LEN: usize = 32;
/// The blob's first four bytes.
pub const CONFIG_MAGIC: [u8; 4] = *b"LLCF";
/// The layout version this code reads and writes.
pub const CONFIG_VERSION: u8 = 1;

/// A device's network identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceConfig {
    /// IPv4 address.
    pub ip: [u8; 4],
    /// IPv4 prefix length, 1..=32.
    pub prefix: u8,
    /// Unicast MAC address.
    pub mac: [u8; 6],
}

/// Why a blob was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ConfigError {
    /// No `LLCF` magic: nothing was loaded there.
    NoBlob,
    /// A version this code does not know.
    Version(u8),
    /// The CRC does not match (a torn or corrupted blob).
    Crc,
    /// The prefix is not 1..=32, or the MAC is multicast.
    Invalid,
}

impl DeviceConfig {
    /// The address used when no blob is present: 198.18.0.2/24, MAC 02:4c:4c:00:00:02.
    pub const DEFAULT: DeviceConfig = DeviceConfig {
        ip: [198, 18, 0, 2],
        prefix: 24,
        mac: [0x02, 0x4c, 0x4c, 0, 0, 0x02],
    };

    /// Reads a blob; any byte may be wrong, nothing panics.
    pub fn parse(blob: &[u8]) -> Result<DeviceConfig, ConfigError> {
        let blob: &[u8; CONFIG_LEN] = blob
            .get(..CONFIG_LEN)
            .and_then(|b| b.try_into().ok())
            .ok_or(ConfigError::NoBlob)?;
        if blob[..4] != CONFIG_MAGIC {
            return Err(ConfigError::NoBlob);
        }
        if blob[4] != CONFIG_VERSION {
            return Err(ConfigError::Version(blob[4]));
        }
        let stored = u32::from_le_bytes([blob[28], blob[29], blob[30], blob[31]]);
        if crc32(&blob[..28]) != stored {
            return Err(ConfigError::Crc);
        }
        let config = DeviceConfig {
            ip: [blob[8], blob[9], blob[10], blob[11]],
            prefix: blob[5],
            mac: [blob[12], blob[13], blob[14], blob[15], blob[16], blob[17]],
        };
        if !config.is_valid() {
            return Err(ConfigError::Invalid);
        }
        Ok(config)
    }

    /// The blob for this configuration.
    pub fn to_bytes(&self) -> [u8; CONFIG_LEN] {
        let mut b = [0u8; CONFIG_LEN];
        b[..4].copy_from_slice(&CONFIG_MAGIC);
        b[4] = CONFIG_VERSION;
        b[5] = self.prefix;
        b[8..12].copy_from_slice(&self.ip);
        b[12..18].copy_from_slice(&self.mac);
        let crc = crc32(&b[..28]);
        b[28..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Prefix 1..=32 and a unicast MAC.
    pub fn is_valid(&self) -> bool {
        (1..=32).contains(&self.prefix) && self.mac[0] & 1 == 0
    }
}

/// CRC-32 (IEEE, reflected), bit by bit: 28 bytes once at boot do not justify a 16 KiB table
/// in a firmware image (crc32fast's), which is what linking crc32fast here cost.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_is_the_ieee_one() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn round_trip() {
        let c = DeviceConfig {
            ip: [198, 18, 5, 9],
            prefix: 30,
            mac: [2, 1, 2, 3, 4, 5],
        };
        assert_eq!(DeviceConfig::parse(&c.to_bytes()), Ok(c));
    }

    #[test]
    fn every_single_byte_change_is_refused() {
        let good = DeviceConfig::DEFAULT.to_bytes();
        for i in 0..CONFIG_LEN {
            for bit in 0..8 {
                let mut b = good;
                b[i] ^= 1 << bit;
                assert!(DeviceConfig::parse(&b).is_err(), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn short_empty_and_invalid_blobs() {
        assert_eq!(DeviceConfig::parse(&[]), Err(ConfigError::NoBlob));
        assert_eq!(DeviceConfig::parse(&[0; 64]), Err(ConfigError::NoBlob));
        let mut c = DeviceConfig::DEFAULT;
        c.prefix = 33;
        assert_eq!(
            DeviceConfig::parse(&c.to_bytes()),
            Err(ConfigError::Invalid)
        );
        c.prefix = 24;
        c.mac[0] = 1;
        assert_eq!(
            DeviceConfig::parse(&c.to_bytes()),
            Err(ConfigError::Invalid)
        );
    }
}
