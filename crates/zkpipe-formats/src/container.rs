//! The binary container every snarkjs/circom file shares: 4-byte magic, u32 version,
//! u32 section count, then sections of (u32 id, u64 size, data), all little-endian.
//! One reader serves zkey, wtns and r1cs; the per-format modules sit on top of it.

use crate::error::ErrorKind;
use std::ops::{Range, RangeInclusive};

/// Where one section's data lies in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionInfo {
    /// Section id.
    pub id: u32,
    /// Byte range of its data in the file.
    pub range: Range<usize>,
}

/// A parsed section table over a file's bytes.
#[derive(Debug, Clone)]
pub struct Container {
    /// Container version from the file header.
    pub version: u32,
    /// Sections in file order.
    pub sections: Vec<SectionInfo>,
}

impl Container {
    /// Reads the header and section table; checks that every section lies inside the file.
    pub fn parse(
        bytes: &[u8],
        magic: &'static str,
        versions: RangeInclusive<u32>,
        supported: &'static str,
    ) -> Result<Self, ErrorKind> {
        let mut r = Reader::new(bytes, 0, "file header");
        let found = r.bytes(4)?;
        if found != magic.as_bytes() {
            return Err(ErrorKind::BadMagic {
                expected: magic,
                found: String::from_utf8_lossy(found).into_owned(),
            });
        }
        let version = r.u32()?;
        if !versions.contains(&version) {
            return Err(ErrorKind::UnsupportedVersion {
                kind: magic,
                found: version,
                supported,
            });
        }
        let n_sections = r.u32()?;
        let mut sections = Vec::new();
        for _ in 0..n_sections {
            r.what = "section header";
            let id = r.u32()?;
            let size = r.u64()?;
            r.what = "section data";
            let start = r.pos;
            let size = usize::try_from(size).map_err(|_| r.truncated(size))?;
            r.bytes(size)?;
            sections.push(SectionInfo {
                id,
                range: start..start + size,
            });
        }
        Ok(Self { version, sections })
    }

    /// The byte range of a section that must appear exactly once.
    pub fn unique(&self, id: u32, name: &'static str) -> Result<Range<usize>, ErrorKind> {
        let mut found = self.sections.iter().filter(|s| s.id == id);
        let first = found.next().ok_or(ErrorKind::MissingSection { id, name })?;
        if found.next().is_some() {
            return Err(ErrorKind::DuplicateSection { id, name });
        }
        Ok(first.range.clone())
    }
}

/// Checks that a section has exactly the size its header implies.
pub fn expect_size(
    range: &Range<usize>,
    id: u32,
    name: &'static str,
    expected: u64,
) -> Result<(), ErrorKind> {
    let found = range.len() as u64;
    if found != expected {
        return Err(ErrorKind::SectionSize {
            id,
            name,
            expected,
            found,
        });
    }
    Ok(())
}

/// A little-endian cursor that reports truncation with the file offset.
pub struct Reader<'a> {
    buf: &'a [u8],
    /// Current offset in the file.
    pub pos: usize,
    /// What is being read, for error messages.
    pub what: &'static str,
}

impl<'a> Reader<'a> {
    /// A cursor over `buf` starting at file offset `pos`.
    pub fn new(buf: &'a [u8], pos: usize, what: &'static str) -> Self {
        Self { buf, pos, what }
    }

    fn truncated(&self, needed: u64) -> ErrorKind {
        ErrorKind::Truncated {
            what: self.what,
            needed,
            offset: self.pos as u64,
            len: self.buf.len() as u64,
        }
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], ErrorKind> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| self.truncated(n as u64))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// The next u32.
    pub fn u32(&mut self) -> Result<u32, ErrorKind> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next u64.
    pub fn u64(&mut self) -> Result<u64, ErrorKind> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

/// Builds a container in memory: the writer side of [`Container`].
#[derive(Debug)]
pub struct ContainerWriter {
    buf: Vec<u8>,
    n_sections: u32,
}

impl ContainerWriter {
    /// Starts a file with this magic and version.
    pub fn new(magic: &[u8; 4], version: u32) -> Self {
        Self {
            buf: file_header(magic, version),
            n_sections: 0,
        }
    }

    /// Appends one section.
    pub fn section(&mut self, id: u32, data: &[u8]) {
        self.buf
            .extend_from_slice(&section_header(id, data.len() as u64));
        self.buf.extend_from_slice(data);
        self.n_sections += 1;
    }

    /// The finished file.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf[8..12].copy_from_slice(&self.n_sections.to_le_bytes());
        self.buf
    }
}

/// A file's first 12 bytes: its magic, its version and a section count of 0 (bytes 8..12,
/// set when the file is finished).
fn file_header(magic: &[u8; 4], version: u32) -> Vec<u8> {
    let mut h = magic.to_vec();
    h.extend_from_slice(&version.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h
}

/// A section's 12 bytes before its data: its id and its size.
fn section_header(id: u32, size: u64) -> [u8; 12] {
    let mut h = [0u8; 12];
    h[..4].copy_from_slice(&id.to_le_bytes());
    h[4..].copy_from_slice(&size.to_le_bytes());
    h
}

/// A container as a list of byte slices in file order, the sections' data borrowed: what
/// writes a file of many GB (a large key) without gathering it in one buffer first.
#[derive(Debug)]
pub struct ContainerParts<'a> {
    parts: Vec<std::borrow::Cow<'a, [u8]>>,
    n_sections: u32,
}

impl<'a> ContainerParts<'a> {
    /// Starts a file with this magic and version.
    pub fn new(magic: &[u8; 4], version: u32) -> Self {
        Self {
            parts: vec![file_header(magic, version).into()],
            n_sections: 0,
        }
    }

    /// Appends one section whose data is `pieces`, in order (borrowed or owned).
    pub fn section(&mut self, id: u32, pieces: Vec<std::borrow::Cow<'a, [u8]>>) {
        let size = pieces.iter().map(|p| p.len() as u64).sum();
        self.parts.push(section_header(id, size).to_vec().into());
        self.parts.extend(pieces);
        self.n_sections += 1;
    }

    /// The file's slices, in order.
    pub fn finish(mut self) -> Vec<std::borrow::Cow<'a, [u8]>> {
        self.parts[0].to_mut()[8..12].copy_from_slice(&self.n_sections.to_le_bytes());
        self.parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = ContainerWriter::new(b"test", 1);
        w.section(1, &[1, 2, 3]);
        w.section(2, &[]);
        w.section(2, &[9]);
        w.finish()
    }

    #[test]
    fn parses_sections_and_finds_unique_ones() {
        let bytes = sample();
        let c = Container::parse(&bytes, "test", 1..=1, "1").unwrap();
        assert_eq!(c.sections.len(), 3);
        assert_eq!(&bytes[c.unique(1, "one").unwrap()], &[1, 2, 3]);
        assert!(matches!(
            c.unique(2, "two"),
            Err(ErrorKind::DuplicateSection { id: 2, .. })
        ));
        assert!(matches!(
            c.unique(3, "three"),
            Err(ErrorKind::MissingSection { id: 3, .. })
        ));
    }

    #[test]
    fn parts_are_the_writers_file_in_slices() {
        let mut p = ContainerParts::new(b"test", 1);
        let three = [2u8, 3];
        p.section(
            1,
            vec![vec![1u8].into(), (&[][..]).into(), (&three[..]).into()],
        );
        p.section(2, vec![]);
        p.section(2, vec![vec![9u8].into()]);
        assert_eq!(p.finish().concat(), sample());
    }

    #[test]
    fn rejects_wrong_magic_version_and_truncation() {
        let bytes = sample();
        assert!(matches!(
            Container::parse(&bytes, "zkey", 1..=1, "1"),
            Err(ErrorKind::BadMagic { .. })
        ));
        assert!(matches!(
            Container::parse(&bytes, "test", 2..=2, "2"),
            Err(ErrorKind::UnsupportedVersion { found: 1, .. })
        ));
        for cut in 0..bytes.len() {
            assert!(
                Container::parse(&bytes[..cut], "test", 1..=1, "1").is_err(),
                "cut at {cut} parsed"
            );
        }
    }
}
