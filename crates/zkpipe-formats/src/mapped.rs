//! Files held as memory maps, so that a multi-gigabyte key is loaded without a copy and
//! its pages can be handed back to the OS once converted.
#![allow(unsafe_code)]

use crate::error::{Error, ErrorKind};
use memmap2::{Mmap, UncheckedAdvice};
use std::ops::Range;
use std::path::{Path, PathBuf};

enum Backing {
    Map(Mmap),
    Bytes(Vec<u8>),
}

/// A read-only file in memory: mapped from disk, or owned bytes (tests, generated keys).
pub struct MappedFile {
    path: PathBuf,
    backing: Backing,
}

impl MappedFile {
    /// Maps a file read-only.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let file = crate::files::open_input(path)?;
        let meta = file
            .metadata()
            .map_err(|e| Error::new(path, ErrorKind::Io(e)))?;
        let backing = if !meta.is_file() {
            // A pipe or device cannot be mapped: read it.
            Backing::Bytes(crate::files::read_input(path)?)
        } else if meta.len() == 0 {
            return Err(Error::new(path, ErrorKind::Empty));
        } else {
            // SAFETY: the map is read-only; zkpipe never writes key files while proving.
            // A file truncated by another process while mapped can fault; that is the
            // documented price of mapping, as with every mmap-based key loader.
            Backing::Map(
                unsafe { Mmap::map(&file) }.map_err(|e| Error::new(path, ErrorKind::Io(e)))?,
            )
        };
        Ok(Self {
            path: path.to_path_buf(),
            backing,
        })
    }

    /// Wraps bytes already in memory under a name used in messages.
    pub fn from_bytes(path: impl AsRef<Path>, bytes: Vec<u8>) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            backing: Backing::Bytes(bytes),
        }
    }

    /// The file's name, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// All bytes of the file.
    pub fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Map(m) => m,
            Backing::Bytes(b) => b,
        }
    }

    /// Tells the OS that a range will not be read again soon, so its pages leave this
    /// process's resident set (a converted key section need not stay resident twice).
    /// Reading the range again later is still correct: the pages come back from the file.
    pub fn release(&self, range: Range<usize>) {
        if let Backing::Map(m) = &self.backing {
            let page = 4096;
            let start = range.start.div_ceil(page) * page;
            let end = range.end / page * page;
            if end > start {
                // SAFETY: the map is a read-only private file mapping; MADV_DONTNEED on it
                // only drops clean pages, which are re-read from the file on next access.
                let _ = unsafe {
                    m.unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
                };
            }
        }
    }
}
