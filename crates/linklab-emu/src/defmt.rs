//! The embassy images' console: defmt frames (rzcobs, each ended by a zero byte) on the
//! board's UART, decoded into readable lines with the image's own defmt table — as
//! `probe-rs`/`defmt-print` show them: timestamp, level, message.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use defmt_decoder::{DecodeError, Table};

/// The defmt table of `image`, or None if it logs no defmt (the main-loop images).
pub fn table_of(image: &Path) -> anyhow::Result<Option<Table>> {
    let elf = std::fs::read(image).with_context(|| format!("cannot read {}", image.display()))?;
    if !elf.starts_with(b"\x7fELF") {
        return Ok(None);
    }
    Table::parse(&elf)
        .with_context(|| format!("{}: its defmt table cannot be read", image.display()))
}

/// Decodes `input` with `table` until it ends, calling `line` with each frame as text
/// (`<seconds> <LEVEL> <message>`). A frame that does not decode is skipped (rzcobs
/// resynchronises at the next zero byte) and said so in a line.
pub fn decode_stream(table: &Table, mut input: impl Read, mut line: impl FnMut(String)) {
    let mut decoder = table.new_stream_decoder();
    let mut buf = [0u8; 4096];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        decoder.received(&buf[..n]);
        loop {
            match decoder.decode() {
                Ok(frame) => {
                    let level = frame.level().map_or("", |l| l.as_str());
                    let time = frame
                        .display_timestamp()
                        .map(|t| t.to_string())
                        .unwrap_or_default();
                    line(format!(
                        "{time} {:<5} {}",
                        level.to_uppercase(),
                        frame.display_message()
                    ));
                }
                Err(DecodeError::UnexpectedEof) => break,
                Err(DecodeError::Malformed) if table.encoding().can_recover() => {
                    line("(defmt: a malformed frame was skipped)".into());
                }
                Err(DecodeError::Malformed) => {
                    line("(defmt: malformed frame; the rest of the console is not decoded)".into());
                    return;
                }
            }
        }
    }
}
