//! A `.wtns` packed for the job store: each value's bytes above its highest non-zero one
//! dropped, the rest of the file kept as it is. A circom witness is mostly 0s and 1s (a
//! SHA-256 circuit's: 58% 0, 42% 1), so its 32-byte values pack ~20 times smaller, and the
//! store writes and syncs that much less per accepted job (on the GPU hosts the disk's
//! synced bytes, not the GPUs, bounded the rate of small proofs:
//! lab/experiments/042h-disk-bound-accepts.md). A general compressor would do the same
//! at several times the CPU per byte and costs as much on witnesses that do not shrink;
//! this one scans each value once, and gives up ([`pack`] returns `None`) unless the
//! witness halves.
//!
//! Layout, integers little-endian:
//!
//! ```text
//! "zkpw" | version u8 (1) | n8 u8 | head_len u32 | head | n u32 | tail_len u32 | tail
//!        | n × (len u8 ≤ n8, then the value's len low bytes)
//! ```
//!
//! where `head` is the file up to its values, `tail` whatever follows them, and the
//! unpacked value is its bytes followed by n8 − len zeros. [`unpack`] gives back the
//! original bytes exactly, and passes anything else (a plain `.wtns`, circuit inputs)
//! through unchanged: no `.wtns` or JSON starts with the magic.

use crate::error::ErrorKind;
use crate::wtns::{byte_len, Wtns};
use std::borrow::Cow;

/// The first bytes of a packed witness.
pub const MAGIC: &[u8; 4] = b"zkpw";
const VERSION: u8 = 1;

/// `bytes` packed, if they are a `.wtns` whose values pack to at most half its size;
/// `None` otherwise (anything that is not a `.wtns`, or values that do not shrink enough
/// to be worth a second form, e.g. random ones).
pub fn pack(bytes: &[u8]) -> Option<Vec<u8>> {
    // The sections only: packing moves the values without reading them as numbers (the
    // engine checked them at submit, and checks them again when it reads them back).
    let view = Wtns::layout(bytes).ok()?;
    let n8 = view.curve.n8r();
    let start = view.values.as_ptr() as usize - bytes.as_ptr() as usize;
    let (head, tail) = (&bytes[..start], &bytes[start + view.values.len()..]);
    let word = |n: usize| u32::try_from(n).ok().map(u32::to_le_bytes);
    let (head_len, n, tail_len) = (
        word(head.len())?,
        word(view.values.len() / n8)?,
        word(tail.len())?,
    );
    // One pass into room for half the input, giving up once it is full: a circom
    // witness's scan costs one look at each value, random values (a dev key's) a look at
    // about half of them and the bytes written so far. (Sizing first, then writing, took
    // twice the CPU: lab/experiments/042j-host-cpu.md.)
    let budget = bytes.len() / 2;
    let mut out = Vec::with_capacity(budget);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[VERSION, n8 as u8]);
    out.extend_from_slice(&head_len);
    out.extend_from_slice(head);
    out.extend_from_slice(&n);
    out.extend_from_slice(&tail_len);
    out.extend_from_slice(tail);
    for value in view.values.chunks_exact(n8) {
        let len = byte_len(value) as u8;
        out.push(len);
        // A one-byte value (a circom witness's 1s) without a call to copy one byte.
        match len {
            0 => {}
            1 => out.push(value[0]),
            _ => out.extend_from_slice(&value[..len as usize]),
        }
        if out.len() > budget {
            return None;
        }
    }
    (out.len() <= budget).then_some(out)
}

/// [`unpack`] of bytes already owned: anything without the magic is handed back as it
/// is, without a copy (what a job store reads back, packed or not).
pub fn unpack_owned(bytes: Vec<u8>) -> Result<Vec<u8>, ErrorKind> {
    match unpack(&bytes)? {
        Cow::Borrowed(_) => Ok(bytes),
        Cow::Owned(raw) => Ok(raw),
    }
}

/// The original bytes of what [`pack`] made; anything without the magic as it is.
pub fn unpack(bytes: &[u8]) -> Result<Cow<'_, [u8]>, ErrorKind> {
    if !bytes.starts_with(MAGIC) {
        return Ok(Cow::Borrowed(bytes));
    }
    let mut r = Cursor {
        bytes,
        pos: MAGIC.len(),
    };
    let version = r.take(1, "version")?[0];
    if version != VERSION {
        return Err(ErrorKind::UnsupportedVersion {
            kind: "packed witness",
            found: u32::from(version),
            supported: "1",
        });
    }
    let n8 = r.take(1, "value size")?[0] as usize;
    let head_len = r.u32("head length")?;
    let head = r.take(head_len, "head")?;
    let n = r.u32("value count")?;
    let tail_len = r.u32("tail length")?;
    let tail = r.take(tail_len, "tail")?;
    let mut out = Vec::with_capacity(head.len() + n * n8 + tail.len());
    out.extend_from_slice(head);
    for index in 0..n {
        let len = r.take(1, "value length")?[0] as usize;
        if len > n8 {
            return Err(ErrorKind::InvalidRecord {
                what: "packed witness value",
                index: index as u64,
                why: format!("{len} bytes in a value of {n8}"),
            });
        }
        out.extend_from_slice(r.take(len, "value")?);
        out.resize(out.len() + n8 - len, 0);
    }
    if r.pos != bytes.len() {
        return Err(ErrorKind::InvalidHeader(format!(
            "packed witness: {} bytes after its last value",
            bytes.len() - r.pos
        )));
    }
    out.extend_from_slice(tail);
    Ok(Cow::Owned(out))
}

/// Reads a packed witness front to back, each short read an error naming the field.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ErrorKind> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(ErrorKind::Truncated {
                what,
                needed: n as u64,
                offset: self.pos as u64,
                len: self.bytes.len() as u64,
            })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u32(&mut self, what: &'static str) -> Result<usize, ErrorKind> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CurveId;

    /// A `.wtns` of `values` (each below 2^64, so valid in either field) on `curve`.
    fn wtns(curve: CurveId, values: &[u64]) -> Vec<u8> {
        let n8 = curve.n8r();
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|v| {
                let mut b = v.to_le_bytes().to_vec();
                b.resize(n8, 0);
                b
            })
            .collect();
        Wtns {
            curve,
            n_witness: values.len() as u32,
            values: bytes,
        }
        .to_bytes()
    }

    #[test]
    fn a_witness_of_bits_packs_small_and_unpacks_to_the_same_bytes() {
        for curve in [CurveId::Bn254, CurveId::Bls12_381] {
            let values: Vec<u64> = (0..1000u64)
                .map(|i| (i * 7 % 3) & 1)
                .chain([1 << 40, u64::MAX])
                .collect();
            let raw = wtns(curve, &values);
            let packed = pack(&raw).expect("bits pack");
            assert!(
                packed.len() * 10 < raw.len(),
                "{} of {}",
                packed.len(),
                raw.len()
            );
            assert!(packed.starts_with(MAGIC));
            assert_eq!(unpack(&packed).unwrap(), raw, "{curve:?}");
            assert_eq!(unpack_owned(packed).unwrap(), raw, "{curve:?}");
        }
    }

    /// Packing moves bytes without reading them as numbers: a value at or above the
    /// modulus (which reading the witness refuses) comes back as it was.
    #[test]
    fn values_are_moved_not_checked() {
        let mut raw = wtns(CurveId::Bn254, &[1; 100]);
        let values_end = raw.len() - 32;
        raw[values_end..].fill(0xff);
        assert!(Wtns::view(&raw).is_err());
        let packed = pack(&raw).expect("mostly 1s pack");
        assert_eq!(unpack(&packed).unwrap(), raw);
    }

    #[test]
    fn full_size_values_and_other_bytes_are_left_as_they_are() {
        // Values of 8 significant bytes in 32: packed they would be over a quarter.
        let big = wtns(CurveId::Bn254, &vec![u64::MAX; 100]);
        assert!(pack(&big).is_some());
        let full: Vec<u8> = {
            let mut w = Wtns::parse(&big).unwrap();
            for v in w.values.chunks_exact_mut(32) {
                v[30] = 1;
            }
            w.to_bytes()
        };
        assert_eq!(pack(&full), None, "values that do not halve");
        assert_eq!(pack(b"{\"a\": 1}"), None, "circuit inputs");
        for other in [&full[..], b"{\"a\": 1}", b""] {
            assert!(matches!(unpack(other), Ok(Cow::Borrowed(b)) if b == other));
            assert_eq!(unpack_owned(other.to_vec()).unwrap(), other);
        }
    }

    #[test]
    fn a_damaged_packed_witness_is_an_error_not_other_bytes() {
        let packed = pack(&wtns(CurveId::Bn254, &[0, 1, 2, 3, 300])).unwrap();
        for cut in [5, 9, packed.len() - 1] {
            let e = unpack(&packed[..cut]).unwrap_err();
            assert!(matches!(e, ErrorKind::Truncated { .. }), "{cut}: {e}");
        }
        let mut longer = packed.clone();
        longer.push(0);
        assert!(matches!(unpack(&longer), Err(ErrorKind::InvalidHeader(_))));
        let mut version = packed.clone();
        version[4] = 9;
        assert!(matches!(
            unpack(&version),
            Err(ErrorKind::UnsupportedVersion { .. })
        ));
        // The last value, 300, is its length 2 and bytes 44, 1.
        let mut oversized = packed;
        let at = oversized.len() - 3;
        assert_eq!(oversized[at..], [2, 44, 1]);
        oversized[at] = 33;
        assert!(matches!(
            unpack(&oversized),
            Err(ErrorKind::InvalidRecord { .. })
        ));
    }
}
