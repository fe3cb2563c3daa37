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

use crate::curve::CurveId;
use crate::error::ErrorKind;
use crate::wtns::{byte_len, lt_le, Wtns};
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

/// The original bytes of what [`pack`] made; anything without the magic as it is.
pub fn unpack(bytes: &[u8]) -> Result<Cow<'_, [u8]>, ErrorKind> {
    if !bytes.starts_with(MAGIC) {
        return Ok(Cow::Borrowed(bytes));
    }
    let p = Parts::read(bytes)?;
    let mut out = Vec::with_capacity(p.head.len() + p.n * p.n8 + p.tail.len());
    out.extend_from_slice(p.head);
    p.each_value(|_, low| {
        out.extend_from_slice(low);
        out.resize(out.len() + p.n8 - low.len(), 0);
        Ok(())
    })?;
    out.extend_from_slice(p.tail);
    Ok(Cow::Owned(out))
}

/// A packed witness read in place, for a reader that converts its values without first
/// unpacking them (the daemon, which takes witnesses packed on the wire: a 2^25
/// SHA-256-valued partition crosses as 47.6 MB instead of 1.07 GB). Made by
/// [`PackedView::parse`], which checks everything but the values themselves;
/// [`PackedView::decode`] checks those.
#[derive(Debug, Clone, Copy)]
pub struct PackedView<'a> {
    /// The curve whose scalar field the values live in (from the `.wtns` header it holds).
    pub curve: CurveId,
    /// Number of values.
    pub n_witness: u32,
    parts: Parts<'a>,
}

impl<'a> PackedView<'a> {
    /// Parses a packed witness (it starts with [`MAGIC`]): its layout, and the `.wtns`
    /// header its head holds, which must describe exactly the values that follow.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ErrorKind> {
        if !bytes.starts_with(MAGIC) {
            return Err(ErrorKind::BadMagic {
                expected: "packed witness",
                found: String::from_utf8_lossy(&bytes[..bytes.len().min(4)]).into_owned(),
            });
        }
        let parts = Parts::read(bytes)?;
        let bad = |why: String| ErrorKind::InvalidHeader(format!("packed witness: {why}"));
        // The head ends with its values section's size (the section's data follows its
        // header at once): the file without its values is that size set to 0.
        let Some(size_at) = parts.head.len().checked_sub(8) else {
            return Err(bad(format!("a head of {} bytes", parts.head.len())));
        };
        let mut shell = Vec::with_capacity(parts.head.len() + parts.tail.len());
        shell.extend_from_slice(&parts.head[..size_at]);
        shell.extend_from_slice(&0u64.to_le_bytes());
        shell.extend_from_slice(parts.tail);
        let (curve, n_witness, values) = Wtns::sections(&shell)?;
        if values != (parts.head.len()..parts.head.len()) {
            return Err(bad("its head does not end at its values".into()));
        }
        let declared = u64::from_le_bytes(parts.head[size_at..].try_into().expect("8 bytes"));
        if parts.n8 != curve.n8r()
            || parts.n != n_witness as usize
            || declared != parts.n as u64 * parts.n8 as u64
        {
            return Err(bad(format!(
                "{} values of {} bytes, but its .wtns header says {n_witness} of {} ({declared} bytes)",
                parts.n,
                parts.n8,
                curve.n8r()
            )));
        }
        Ok(Self {
            curve,
            n_witness,
            parts,
        })
    }

    /// Each value converted by `convert`, in order. `convert` gets the value's bytes up
    /// to its highest non-zero one (none for 0), little-endian, and returns `None` for a
    /// value that is not a field element, which fails the decode naming it. A value
    /// longer than its field's bytes, a stream that ends early or has bytes after its
    /// last value fail it too.
    pub fn decode<T>(
        &self,
        mut convert: impl FnMut(&'a [u8]) -> Option<T>,
    ) -> Result<Vec<T>, ErrorKind> {
        let mut out = Vec::with_capacity(self.parts.n);
        self.parts.each_value(|index, low| {
            out.push(convert(low).ok_or_else(|| ErrorKind::InvalidRecord {
                what: "witness value",
                index: index as u64,
                why: "not below the field modulus".into(),
            })?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Checks every value as [`Self::decode`] would, without converting any: each below
    /// its curve's scalar modulus. Only a value of the modulus's full length can reach it,
    /// so a circom witness's 0s and 1s cost one look at their length byte; a daemon checks
    /// a queued witness this way and converts it once it is admitted.
    pub fn check(&self) -> Result<(), ErrorKind> {
        let r = self.curve.r_le();
        // `decode` has refused a value longer than the modulus: a shorter one is below it.
        let below = |low: &[u8]| low.len() < r.len() || lt_le(low, &r);
        // `decode` into zero-sized values: nothing is allocated.
        self.decode(|low| below(low).then_some(())).map(drop)
    }
}

/// Where a packed witness's `.wtns` head starts: after its magic, version, value size and
/// head length.
pub const HEAD_AT: usize = MAGIC.len() + 2 + 4;

/// The `.wtns` head that the first bytes of a packed witness hold (as much of it as
/// `prefix` has), so that a receiver can check its curve and count before the rest
/// arrives; `None` if `prefix` is not the start of a packed witness.
pub fn head_of(prefix: &[u8]) -> Option<&[u8]> {
    if !prefix.starts_with(MAGIC) {
        return None;
    }
    let len = u32::from_le_bytes(prefix.get(HEAD_AT - 4..HEAD_AT)?.try_into().ok()?) as usize;
    let head = prefix.get(HEAD_AT..)?;
    Some(&head[..len.min(head.len())])
}

/// A packed witness's fields as laid out (see the module doc), its values not yet read.
#[derive(Debug, Clone, Copy)]
struct Parts<'a> {
    n8: usize,
    head: &'a [u8],
    n: usize,
    tail: &'a [u8],
    /// The whole packed witness, its n values (each a length byte and that many bytes)
    /// from `values_at` to its end.
    bytes: &'a [u8],
    values_at: usize,
}

impl<'a> Parts<'a> {
    /// The fields of `bytes`, which start with [`MAGIC`].
    fn read(bytes: &'a [u8]) -> Result<Self, ErrorKind> {
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
        Ok(Self {
            n8,
            head,
            n,
            tail,
            bytes,
            values_at: r.pos,
        })
    }

    /// Calls `each(index, low bytes)` for the n values in order; an error for a value
    /// longer than n8, a short stream, or bytes after the last value.
    fn each_value(
        &self,
        mut each: impl FnMut(usize, &'a [u8]) -> Result<(), ErrorKind>,
    ) -> Result<(), ErrorKind> {
        let mut r = Cursor {
            bytes: self.bytes,
            pos: self.values_at,
        };
        for index in 0..self.n {
            let len = r.take(1, "value length")?[0] as usize;
            if len > self.n8 {
                return Err(ErrorKind::InvalidRecord {
                    what: "packed witness value",
                    index: index as u64,
                    why: format!("{len} bytes in a value of {}", self.n8),
                });
            }
            each(index, r.take(len, "value")?)?;
        }
        if r.pos != self.bytes.len() {
            return Err(ErrorKind::InvalidHeader(format!(
                "packed witness: {} bytes after its last value",
                self.bytes.len() - r.pos
            )));
        }
        Ok(())
    }
}

/// Reads a packed witness front to back, each short read an error naming the field.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ErrorKind> {
        // The error is built only when it is one: this runs for every value of a packed
        // witness (building it each time took a quarter of a conversion; lab 042r).
        let start = self.pos;
        match start
            .checked_add(n)
            .and_then(|end| self.bytes.get(start..end))
        {
            Some(s) => {
                self.pos = start + n;
                Ok(s)
            }
            None => Err(ErrorKind::Truncated {
                what,
                needed: n as u64,
                offset: start as u64,
                len: self.bytes.len() as u64,
            }),
        }
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
        }
    }

    /// `check` refuses what `decode` into field elements refuses, naming the value: the
    /// modulus itself and above, not the value just below it or a 31-byte one.
    #[test]
    fn check_refuses_values_at_or_above_the_modulus_by_index() {
        for curve in [CurveId::Bn254, CurveId::Bls12_381] {
            let r = curve.r_le();
            let below = {
                let mut b = r.clone();
                b[0] -= 1; // r is odd
                b
            };
            let above = {
                let mut b = r.clone();
                b[1] = b[1].wrapping_add(1);
                b
            };
            let with = |last: &[Vec<u8>]| {
                let mut w = Wtns::parse(&wtns(curve, &[1; 200])).unwrap();
                let mut values = w.values[..(200 - last.len()) * 32].to_vec();
                last.iter().for_each(|v| values.extend_from_slice(v));
                w.values = values;
                pack(&w.to_bytes()).expect("mostly 1s pack")
            };
            let ok = with(&[
                below.clone(),
                vec![0xff; 31].into_iter().chain([0]).collect(),
            ]);
            PackedView::parse(&ok).unwrap().check().unwrap();
            for (bad, at) in [
                (with(&[r.clone(), below.clone()]), 198),
                (with(&[above]), 199),
            ] {
                let e = PackedView::parse(&bad).unwrap().check().unwrap_err();
                assert!(
                    matches!(e, ErrorKind::InvalidRecord { index, .. } if index == at),
                    "{curve:?}: {e}"
                );
            }
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

    #[test]
    fn a_packed_view_decodes_the_values_the_wtns_holds() {
        for curve in [CurveId::Bn254, CurveId::Bls12_381] {
            let values: Vec<u64> = (0..500u64).map(|i| i % 3 % 2).chain([7, 1 << 40]).collect();
            let raw = wtns(curve, &values);
            let packed = pack(&raw).expect("bits pack");
            let view = PackedView::parse(&packed).unwrap();
            assert_eq!((view.curve, view.n_witness), (curve, values.len() as u32));
            let n8 = curve.n8r();
            let decoded = view
                .decode(|low| {
                    let mut v = low.to_vec();
                    v.resize(n8, 0);
                    Some(v)
                })
                .unwrap();
            assert_eq!(
                decoded.concat(),
                Wtns::parse(&raw).unwrap().values,
                "{curve:?}"
            );
            // What a receiver checks first: the head, from the first bytes alone.
            let head = head_of(&packed[..HEAD_AT + 20]).unwrap();
            assert_eq!(head, &raw[..20]);
            assert_eq!(head_of(&raw), None);
        }
    }

    #[test]
    fn a_packed_view_names_what_is_wrong() {
        let raw = wtns(CurveId::Bn254, &[0, 1, 2, 300]);
        let packed = pack(&raw).unwrap();
        // A value its converter refuses (as the daemon refuses one ≥ the modulus).
        let e = PackedView::parse(&packed)
            .unwrap()
            .decode(|low| (low.len() < 2).then_some(()))
            .unwrap_err();
        assert!(e.to_string().contains("witness value at index 3"), "{e}");
        // A count that is not its head's.
        let n_at = HEAD_AT + raw.len() - 4 * 32;
        let mut count = packed.clone();
        count[n_at] = 3;
        let e = PackedView::parse(&count).unwrap_err();
        assert!(e.to_string().contains("header says 4"), "{e}");
        // A value longer than its field's bytes (the first value's length byte: the four
        // values take 1 + 2 + 2 + 3 bytes at the end).
        let mut wide = packed.clone();
        let first = wide.len() - 8;
        wide[first] = 33;
        let e = PackedView::parse(&wide).unwrap().decode(Some).unwrap_err();
        assert!(e.to_string().contains("33 bytes in a value of 32"), "{e}");
        // Bytes past its last value, and a stream cut short.
        let mut longer = packed.clone();
        longer.push(0);
        let view = PackedView::parse(&longer).unwrap();
        assert!(matches!(
            view.decode(Some),
            Err(ErrorKind::InvalidHeader(_))
        ));
        let view = PackedView::parse(&packed[..packed.len() - 1]).unwrap();
        assert!(matches!(
            view.decode(Some),
            Err(ErrorKind::Truncated { .. })
        ));
        // Not packed at all.
        assert!(matches!(
            PackedView::parse(&raw),
            Err(ErrorKind::BadMagic { .. })
        ));
    }
}
