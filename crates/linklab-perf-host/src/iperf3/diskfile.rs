//! `-F NAME`: a stream sends the contents of a file (read into its blocks as they go out)
//! or writes what it receives into the file, as iperf3's `diskfile_send`/`diskfile_recv`.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// One stream's file.
pub(super) struct DiskFile {
    file: File,
    /// True if the stream sends the file, false if it writes what arrives.
    sending: bool,
}

impl DiskFile {
    /// Opens `path` to read from (`sending`) or to write into (created, emptied).
    pub(super) fn open(path: &Path, sending: bool) -> io::Result<Self> {
        let file = if sending {
            File::open(path)?
        } else {
            File::options()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)?
        };
        Ok(Self { file, sending })
    }

    /// True if the stream sends the file.
    pub(super) fn sending(&self) -> bool {
        self.sending
    }

    /// Reads the next bytes of the file into `buf` (as many as there are, up to its
    /// length); 0 at the end of the file.
    pub(super) fn fill(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match self.file.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// Gives back the last `n` bytes [`fill`](Self::fill) read (the socket took fewer).
    pub(super) fn unread(&mut self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.file.seek(SeekFrom::Current(-(n as i64)))?;
        }
        Ok(())
    }

    /// Appends received bytes to the file (a file being sent is left alone). A failed
    /// write is ignored, as iperf3's `diskfile_recv` ignores it: the measurement goes on.
    pub(super) fn store(&mut self, bytes: &[u8]) {
        if !self.sending {
            let _ = self.file.write_all(bytes);
        }
    }
}
