//! circom witnesses (`.wtns`, magic `wtns`, version 2): section 1 header (u32 n8, prime,
//! u32 nWitness), section 2 the values, little-endian, standard (non-Montgomery) form.

use crate::container::{expect_size, Container, ContainerWriter, Reader};
use crate::curve::CurveId;
use crate::error::{Error, ErrorKind};
use std::ops::Range;
use std::path::Path;

const HEADER: u32 = 1;
const VALUES: u32 = 2;

/// A parsed witness that borrows its values from the bytes it was parsed from
/// ([`Wtns::view`]): the daemon converts a 2^22 job's 1.28 GB of witnesses from the
/// request's buffers without first copying them into a [`Wtns`] each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WtnsView<'a> {
    /// The curve whose scalar field the values live in.
    pub curve: CurveId,
    /// Number of values.
    pub n_witness: u32,
    /// nWitness values of n8r bytes each, little-endian, standard form, each below the
    /// field's modulus.
    pub values: &'a [u8],
}

/// A witness: the values of every signal, in signal order (index 0 is the constant 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wtns {
    /// The curve whose scalar field the values live in.
    pub curve: CurveId,
    /// Number of values.
    pub n_witness: u32,
    /// nWitness values of n8r bytes each, little-endian, standard form.
    pub values: Vec<u8>,
}

/// Counts of a witness's values by size ([`Wtns::value_classes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValueClasses {
    /// 0.
    pub zero: u64,
    /// 1.
    pub one: u64,
    /// 2 ..< 2^8.
    pub up_to_8_bits: u64,
    /// 2^8 ..< 2^64.
    pub up_to_64_bits: u64,
    /// r − x for 0 < x < 2^64 (circom's small negative numbers).
    pub negative_up_to_64_bits: u64,
    /// Everything else.
    pub full: u64,
}

impl ValueClasses {
    /// The classes' names, in field order, as `zkpipe inspect --json` writes them and
    /// `zkpipe synth --values` reads them.
    pub const NAMES: [&'static str; 6] = [
        "zero",
        "one",
        "upTo8Bits",
        "upTo64Bits",
        "negativeUpTo64Bits",
        "full",
    ];

    /// The counts in [`Self::NAMES`] order.
    pub fn counts(&self) -> [u64; 6] {
        [
            self.zero,
            self.one,
            self.up_to_8_bits,
            self.up_to_64_bits,
            self.negative_up_to_64_bits,
            self.full,
        ]
    }
}

/// Bits in a little-endian integer (0 for zero).
fn bit_len(v: &[u8]) -> u32 {
    match byte_len(v) {
        0 => 0,
        n => 8 * (n as u32 - 1) + (8 - v[n - 1].leading_zeros()),
    }
}

/// Bytes up to and including a little-endian value's highest non-zero one (the packer's
/// length byte, and [`bit_len`]'s top byte).
///
/// Eight bytes at a time from the top: a 0 or a 1 has 31 zero bytes above its lowest, and
/// testing them one by one in the witness packer was ~12% of a daemon's CPU on a GPU host
/// (lab/experiments/042j-host-cpu.md).
pub(crate) fn byte_len(value: &[u8]) -> usize {
    let mut end = value.len();
    while end >= 8 {
        let word = u64::from_le_bytes(value[end - 8..end].try_into().expect("8 bytes"));
        if word != 0 {
            return end - word.leading_zeros() as usize / 8;
        }
        end -= 8;
    }
    value[..end]
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |i| i + 1)
}

/// a − b for little-endian integers of one length, a ≥ b.
fn sub_le(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut borrow = 0i16;
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x as i16 - y as i16 - borrow;
            borrow = (d < 0) as i16;
            d.rem_euclid(256) as u8
        })
        .collect()
}

impl Wtns {
    /// Reads and validates a witness file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes = crate::files::read_input(path)?;
        Self::parse(&bytes).map_err(|k| Error::new(path, k))
    }

    /// Parses a witness from bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, ErrorKind> {
        let v = Self::view(bytes)?;
        Ok(Self {
            curve: v.curve,
            n_witness: v.n_witness,
            values: v.values.to_vec(),
        })
    }

    /// Parses and checks a `.wtns` as [`Self::parse`] does, without copying its values.
    pub fn view(bytes: &[u8]) -> Result<WtnsView<'_>, ErrorKind> {
        let view = Self::layout(bytes)?;
        let modulus = view.curve.r_le();
        for (i, v) in view.values.chunks_exact(view.curve.n8r()).enumerate() {
            if !lt_le(v, &modulus) {
                return Err(ErrorKind::InvalidRecord {
                    what: "witness value",
                    index: i as u64,
                    why: "not below the field modulus".into(),
                });
            }
        }
        Ok(view)
    }

    /// Parses a `.wtns`'s sections as [`Self::view`] does, without checking that its
    /// values are below the modulus: for a reader that only moves the values (the job
    /// store's packer), of a witness checked already or to be checked when it is read.
    pub(crate) fn layout(bytes: &[u8]) -> Result<WtnsView<'_>, ErrorKind> {
        let (curve, n_witness, values) = Self::sections(bytes)?;
        expect_size(
            &values,
            VALUES,
            "values",
            n_witness as u64 * curve.n8r() as u64,
        )?;
        Ok(WtnsView {
            curve,
            n_witness,
            values: &bytes[values],
        })
    }

    /// A `.wtns`'s curve and value count from its header section, and where its values
    /// section lies (its size not checked against the count: a packed witness's shell
    /// holds none of its values, [`crate::packed_wtns::PackedView`]).
    pub(crate) fn sections(bytes: &[u8]) -> Result<(CurveId, u32, Range<usize>), ErrorKind> {
        let c = Container::parse(bytes, "wtns", 2..=2, "2")?;
        let header = c.unique(HEADER, "header")?;
        let mut r = Reader::new(&bytes[..header.end], header.start, "wtns header");
        let n8 = r.u32()? as usize;
        let prime = r.bytes(n8)?;
        let curve = CurveId::from_r_le(prime).ok_or_else(|| {
            ErrorKind::UnknownField(format!(
                "prime {} is neither BN254's nor BLS12-381's scalar field",
                crate::curve::le_to_decimal(prime)
            ))
        })?;
        let n_witness = r.u32()?;
        if r.pos != header.end {
            return Err(ErrorKind::SectionSize {
                id: HEADER,
                name: "header",
                expected: (r.pos - header.start) as u64,
                found: header.len() as u64,
            });
        }
        // The prime matched one of n8r bytes, so the values are n8r bytes each.
        Ok((curve, n_witness, c.unique(VALUES, "values")?))
    }

    /// This witness as a [`WtnsView`].
    pub fn as_view(&self) -> WtnsView<'_> {
        WtnsView {
            curve: self.curve,
            n_witness: self.n_witness,
            values: &self.values,
        }
    }

    /// How many values are 0, 1, small, small negatives (r − x) or full-width: what the
    /// MSMs' value-dependent shortcuts act on.
    pub fn value_classes(&self) -> ValueClasses {
        let n8 = self.curve.n8r();
        let r = self.curve.r_le();
        let mut c = ValueClasses::default();
        for v in self.values.chunks_exact(n8) {
            let bits = bit_len(v);
            match bits {
                0 => c.zero += 1,
                1 => c.one += 1,
                2..=8 => c.up_to_8_bits += 1,
                9..=64 => c.up_to_64_bits += 1,
                _ if bit_len(&sub_le(&r, v)) <= 64 => c.negative_up_to_64_bits += 1,
                _ => c.full += 1,
            }
        }
        c
    }

    /// The i-th value, little-endian.
    pub fn value(&self, i: usize) -> &[u8] {
        let n8 = self.curve.n8r();
        &self.values[i * n8..(i + 1) * n8]
    }

    /// Serializes as snarkjs writes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = ContainerWriter::new(b"wtns", 2);
        let r = self.curve.r_le();
        let mut h = Vec::new();
        h.extend_from_slice(&(r.len() as u32).to_le_bytes());
        h.extend_from_slice(&r);
        h.extend_from_slice(&self.n_witness.to_le_bytes());
        w.section(HEADER, &h);
        w.section(VALUES, &self.values);
        w.finish()
    }
}

/// a < b for equal-length little-endian integers.
///
/// Eight bytes at a time from the top where both are whole words (a field element's 32
/// bytes): a witness's 0s and 1s differ from the modulus in their top word, and a
/// byte-at-a-time loop was ~10% of a store's accept (lab/experiments/042j-host-cpu.md).
pub(crate) fn lt_le(a: &[u8], b: &[u8]) -> bool {
    if a.len() == b.len() && a.len().is_multiple_of(8) {
        let word = |w: &[u8]| u64::from_le_bytes(w.try_into().expect("8 bytes"));
        for (x, y) in a.rchunks_exact(8).zip(b.rchunks_exact(8)) {
            let (x, y) = (word(x), word(y));
            if x != y {
                return x < y;
            }
        }
        return false;
    }
    lt_le_bytewise(a, b)
}

/// [`lt_le`] a byte at a time: for lengths that are not whole words.
fn lt_le_bytewise(a: &[u8], b: &[u8]) -> bool {
    for (x, y) in a.iter().rev().zip(b.iter().rev()) {
        if x != y {
            return x < y;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(curve: CurveId) -> Wtns {
        let mut values = vec![0u8; 3 * 32];
        values[0] = 1;
        values[32] = 7;
        Wtns {
            curve,
            n_witness: 3,
            values,
        }
    }

    #[test]
    fn round_trips_both_curves() {
        for c in CurveId::ALL {
            let w = sample(c);
            assert_eq!(Wtns::parse(&w.to_bytes()).unwrap(), w);
            // The view borrows the same values the parse copies.
            let bytes = w.to_bytes();
            assert_eq!(Wtns::view(&bytes).unwrap(), w.as_view());
        }
    }

    #[test]
    fn rejects_values_out_of_field_and_bad_sizes() {
        let mut w = sample(CurveId::Bn254);
        w.values[64..96].copy_from_slice(&CurveId::Bn254.r_le());
        assert!(matches!(
            Wtns::parse(&w.to_bytes()),
            Err(ErrorKind::InvalidRecord { index: 2, .. })
        ));
        assert!(matches!(
            Wtns::view(&w.to_bytes()),
            Err(ErrorKind::InvalidRecord { index: 2, .. })
        ));
        let mut w = sample(CurveId::Bn254);
        w.n_witness = 4;
        assert!(matches!(
            Wtns::parse(&w.to_bytes()),
            Err(ErrorKind::SectionSize { .. })
        ));
    }

    /// The word-at-a-time comparison answers as the byte-at-a-time one: values equal to
    /// the modulus, one below and above it in each byte, and 0s and 1s, on both curves;
    /// lengths that are not whole words take the byte loop.
    #[test]
    fn below_the_modulus_is_decided_as_byte_by_byte() {
        for c in CurveId::ALL {
            let r = c.r_le();
            let mut values = vec![r.clone(), vec![0; r.len()], vec![1; 1]];
            values[2].resize(r.len(), 0);
            for i in 0..r.len() {
                for delta in [1u8, 0x80] {
                    let mut up = r.clone();
                    up[i] = up[i].wrapping_add(delta);
                    let mut down = r.clone();
                    down[i] = down[i].wrapping_sub(delta);
                    values.extend([up, down]);
                }
            }
            for v in &values {
                assert_eq!(lt_le(v, &r), lt_le_bytewise(v, &r), "{v:?}");
                assert_eq!(
                    lt_le(&v[..31], &r[..31]),
                    lt_le_bytewise(&v[..31], &r[..31])
                );
            }
            assert!(lt_le(&values[1], &r) && !lt_le(&r, &r));
        }
    }

    /// The word-at-a-time scan gives what a byte-at-a-time one does: the highest non-zero
    /// byte at every position, with lower bytes set or not, in values of 32 bytes and of
    /// lengths that are not a multiple of 8.
    #[test]
    fn significant_bytes_are_counted_as_one_by_one() {
        let one_by_one = |v: &[u8]| v.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        for len in [32, 48, 1, 7, 9, 33] {
            assert_eq!(byte_len(&vec![0; len]), 0, "zero of {len}");
            for top in 0..len {
                for low in [0u8, 1, 0xff] {
                    let mut v = vec![low; len];
                    v[top..].fill(0);
                    v[top] = 0x80 >> (top % 8);
                    assert_eq!(byte_len(&v), one_by_one(&v), "{len} {top} {low}");
                    assert_eq!(byte_len(&v), top + 1);
                }
            }
        }
    }
}
