//! snarkjs Groth16 proving keys (`.zkey`, magic `zkey`, version 1).
//!
//! Sections: 1 protocol, 2 header, 3 IC, 4 coefficients of A and B, 5 A, 6 B₁, 7 B₂, 8 C,
//! 9 H, 10 contributions. Points are affine (x, y) with Montgomery-form limbs, all-zero
//! bytes meaning the point at infinity. Coefficient values are stored as v·R² (integer,
//! little-endian), which is how snarkjs's Montgomery multiply turns them back into v.

use crate::container::{expect_size, Container, ContainerParts, Reader};
use crate::curve::CurveId;
use crate::error::{Error, ErrorKind};
use crate::mapped::MappedFile;
use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

/// Section ids of a Groth16 zkey.
pub mod section {
    /// Proving system (u32, 1 = Groth16).
    pub const PROTOCOL: u32 = 1;
    /// Groth16 header.
    pub const HEADER: u32 = 2;
    /// IC: nPublic + 1 G1 points of the verification key.
    pub const IC: u32 = 3;
    /// Coefficients of A and B.
    pub const COEFFICIENTS: u32 = 4;
    /// A query, nVars G1 points.
    pub const A: u32 = 5;
    /// B query in G1, nVars points.
    pub const B1: u32 = 6;
    /// B query in G2, nVars points.
    pub const B2: u32 = 7;
    /// C query for private signals, nVars − nPublic − 1 G1 points.
    pub const C: u32 = 8;
    /// H query, domainSize G1 points.
    pub const H: u32 = 9;
    /// MPC contributions.
    pub const CONTRIBUTIONS: u32 = 10;
}

/// Protocol id of Groth16 in section 1.
pub const PROTOCOL_GROTH16: u32 = 1;

/// Which of the two matrices a coefficient belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matrix {
    /// The A matrix (left inputs).
    A,
    /// The B matrix (right inputs).
    B,
}

/// The Groth16 header (section 2), points as raw file bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groth16Header {
    /// The curve, from q.
    pub curve: CurveId,
    /// Number of signals (witness length), including the constant 1.
    pub n_vars: u32,
    /// Number of public signals (outputs and public inputs).
    pub n_public: u32,
    /// Size of the evaluation domain, a power of two.
    pub domain_size: u32,
    /// α in G1.
    pub alpha1: Vec<u8>,
    /// β in G1.
    pub beta1: Vec<u8>,
    /// β in G2.
    pub beta2: Vec<u8>,
    /// γ in G2.
    pub gamma2: Vec<u8>,
    /// δ in G1.
    pub delta1: Vec<u8>,
    /// δ in G2.
    pub delta2: Vec<u8>,
}

impl Groth16Header {
    fn parse(bytes: &[u8], range: Range<usize>) -> Result<Self, ErrorKind> {
        let mut r = Reader::new(&bytes[..range.end], range.start, "zkey header");
        let n8q = r.u32()? as usize;
        let q = r.bytes(n8q)?;
        let curve = CurveId::from_q_le(q).ok_or_else(|| {
            ErrorKind::UnknownField(format!(
                "base field q = {} is neither BN254's nor BLS12-381's",
                crate::curve::le_to_decimal(q)
            ))
        })?;
        let n8r = r.u32()? as usize;
        let rr = r.bytes(n8r)?;
        if rr != curve.r_le().as_slice() {
            return Err(ErrorKind::UnknownField(format!(
                "scalar field r does not belong to {curve}"
            )));
        }
        let n_vars = r.u32()?;
        let n_public = r.u32()?;
        let domain_size = r.u32()?;
        let (g1, g2) = (curve.g1_bytes(), curve.g2_bytes());
        let mut point = |n| r.bytes(n).map(<[u8]>::to_vec);
        let header = Self {
            curve,
            n_vars,
            n_public,
            domain_size,
            alpha1: point(g1)?,
            beta1: point(g1)?,
            beta2: point(g2)?,
            gamma2: point(g2)?,
            delta1: point(g1)?,
            delta2: point(g2)?,
        };
        if r.pos != range.end {
            return Err(ErrorKind::SectionSize {
                id: section::HEADER,
                name: "header",
                expected: (r.pos - range.start) as u64,
                found: range.len() as u64,
            });
        }
        if !domain_size.is_power_of_two() {
            return Err(ErrorKind::InvalidHeader(format!(
                "domain size {domain_size} is not a power of two"
            )));
        }
        if n_public >= n_vars {
            return Err(ErrorKind::InvalidHeader(format!(
                "nPublic {n_public} must be below nVars {n_vars}"
            )));
        }
        Ok(header)
    }

    fn write(&self, out: &mut Vec<u8>) {
        let q = self.curve.q_le();
        let r = self.curve.r_le();
        out.extend_from_slice(&(q.len() as u32).to_le_bytes());
        out.extend_from_slice(&q);
        out.extend_from_slice(&(r.len() as u32).to_le_bytes());
        out.extend_from_slice(&r);
        for v in [self.n_vars, self.n_public, self.domain_size] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for p in [
            &self.alpha1,
            &self.beta1,
            &self.beta2,
            &self.gamma2,
            &self.delta1,
            &self.delta2,
        ] {
            out.extend_from_slice(p);
        }
    }
}

/// One entry of section 4: `matrix[constraint][signal] += value`.
#[derive(Debug, Clone, Copy)]
pub struct Coefficient<'a> {
    /// A or B.
    pub matrix: Matrix,
    /// Row (constraint index, < domain size).
    pub constraint: u32,
    /// Column (signal index, < nVars).
    pub signal: u32,
    /// The value as stored: v·R² mod r, little-endian, n8r bytes.
    pub value: &'a [u8],
}

/// The point sections of a zkey, for [`ZkeyFile::points`] and [`ZkeyFile::release`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointSection {
    /// Section 3.
    Ic,
    /// Section 5.
    A,
    /// Section 6.
    B1,
    /// Section 7 (G2).
    B2,
    /// Section 8.
    C,
    /// Section 9.
    H,
}

/// A validated, memory-mapped Groth16 zkey.
pub struct ZkeyFile {
    file: MappedFile,
    /// The Groth16 header.
    pub header: Groth16Header,
    layout: Layout,
}

/// Where each section lies, once validated.
struct Layout {
    coefficients: Range<usize>,
    n_coefficients: u32,
    ic: Range<usize>,
    a: Range<usize>,
    b1: Range<usize>,
    b2: Range<usize>,
    c: Range<usize>,
    h: Range<usize>,
}

impl ZkeyFile {
    /// Maps and validates a zkey: magic, version, protocol, header, and every section's
    /// size against the header. Point and coefficient contents are checked by their users.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::from_file(MappedFile::open(path)?)
    }

    /// Validates a zkey already in memory.
    pub fn from_file(file: MappedFile) -> Result<Self, Error> {
        match Self::layout(file.bytes()) {
            Ok((header, layout)) => Ok(Self {
                file,
                header,
                layout,
            }),
            Err(kind) => Err(Error::new(file.path(), kind)),
        }
    }

    fn layout(bytes: &[u8]) -> Result<(Groth16Header, Layout), ErrorKind> {
        let c = Container::parse(bytes, "zkey", 1..=1, "1")?;
        let proto = c.unique(section::PROTOCOL, "protocol")?;
        expect_size(&proto, section::PROTOCOL, "protocol", 4)?;
        let protocol = Reader::new(bytes, proto.start, "protocol").u32()?;
        if protocol != PROTOCOL_GROTH16 {
            return Err(ErrorKind::NotGroth16(protocol));
        }
        let header = Groth16Header::parse(bytes, c.unique(section::HEADER, "header")?)?;
        let (g1, g2) = (
            header.curve.g1_bytes() as u64,
            header.curve.g2_bytes() as u64,
        );
        let n_vars = header.n_vars as u64;
        let n_public = header.n_public as u64;

        let sized = |id, name, expected| -> Result<Range<usize>, ErrorKind> {
            let r = c.unique(id, name)?;
            expect_size(&r, id, name, expected)?;
            Ok(r)
        };
        let coefficients = c.unique(section::COEFFICIENTS, "coefficients")?;
        let n_coefficients = Reader::new(
            &bytes[..coefficients.end],
            coefficients.start,
            "coefficients",
        )
        .u32()?;
        let entry = 12 + header.curve.n8r() as u64;
        expect_size(
            &coefficients,
            section::COEFFICIENTS,
            "coefficients",
            4 + n_coefficients as u64 * entry,
        )?;
        let layout = Layout {
            ic: sized(section::IC, "IC", (n_public + 1) * g1)?,
            a: sized(section::A, "A points", n_vars * g1)?,
            b1: sized(section::B1, "B1 points", n_vars * g1)?,
            b2: sized(section::B2, "B2 points", n_vars * g2)?,
            c: sized(section::C, "C points", (n_vars - n_public - 1) * g1)?,
            h: sized(section::H, "H points", header.domain_size as u64 * g1)?,
            coefficients,
            n_coefficients,
        };
        Ok((header, layout))
    }

    /// The file name, for messages.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    fn range(&self, s: PointSection) -> Range<usize> {
        let l = &self.layout;
        match s {
            PointSection::Ic => l.ic.clone(),
            PointSection::A => l.a.clone(),
            PointSection::B1 => l.b1.clone(),
            PointSection::B2 => l.b2.clone(),
            PointSection::C => l.c.clone(),
            PointSection::H => l.h.clone(),
        }
    }

    /// The whole file's bytes (what a digest of the key covers).
    pub fn bytes(&self) -> &[u8] {
        self.file.bytes()
    }

    /// The raw bytes of a point section (consecutive affine points).
    pub fn points(&self, s: PointSection) -> &[u8] {
        &self.file.bytes()[self.range(s)]
    }

    /// Drops a converted section's pages from the resident set (see [`MappedFile::release`]).
    pub fn release(&self, s: PointSection) {
        self.file.release(self.range(s));
    }

    /// Drops the coefficient section's pages from the resident set.
    pub fn release_coefficients(&self) {
        self.file.release(self.layout.coefficients.clone());
    }

    /// Number of coefficients in section 4.
    pub fn n_coefficients(&self) -> u32 {
        self.layout.n_coefficients
    }

    /// The entries of section 4, each checked for a valid matrix, row and column.
    pub fn coefficients(&self) -> impl Iterator<Item = Result<Coefficient<'_>, Error>> + '_ {
        (0..self.layout.n_coefficients as usize).map(move |i| self.coefficient(i))
    }

    /// Entry `i` of section 4 (below [`Self::n_coefficients`]), checked as
    /// [`Self::coefficients`] checks it: entries can be read in any order, by many threads.
    pub fn coefficient(&self, i: usize) -> Result<Coefficient<'_>, Error> {
        let entry = 12 + self.header.curve.n8r();
        let at = self.layout.coefficients.start + 4 + i * entry;
        let e = &self.file.bytes()[at..at + entry];
        let (domain, n_vars) = (self.header.domain_size, self.header.n_vars);
        let u = |o: usize| u32::from_le_bytes([e[o], e[o + 1], e[o + 2], e[o + 3]]);
        let bad = |why: String| {
            Error::new(
                self.path(),
                ErrorKind::InvalidRecord {
                    what: "coefficient",
                    index: i as u64,
                    why,
                },
            )
        };
        let matrix = match u(0) {
            0 => Matrix::A,
            1 => Matrix::B,
            m => return Err(bad(format!("matrix {m} is neither A (0) nor B (1)"))),
        };
        let (constraint, signal) = (u(4), u(8));
        if constraint >= domain {
            return Err(bad(format!(
                "constraint {constraint} ≥ domain size {domain}"
            )));
        }
        if signal >= n_vars {
            return Err(bad(format!("signal {signal} ≥ nVars {n_vars}")));
        }
        Ok(Coefficient {
            matrix,
            constraint,
            signal,
            value: &e[12..],
        })
    }
}

/// Section 4's entries as the file holds them, for writing a key: each the matrix (A 0,
/// B 1), constraint and signal as little-endian u32s, then the value (v·R² mod r,
/// little-endian). Kept encoded: a large key has hundreds of millions of entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodedCoefficients {
    bytes: Vec<u8>,
    len: usize,
}

impl EncodedCoefficients {
    /// Appends `matrix[constraint][signal] += value`.
    pub fn push(&mut self, matrix: Matrix, constraint: u32, signal: u32, value: &[u8]) {
        let at = self.bytes.len();
        self.bytes.resize(at + Self::entry_len(value.len()), 0);
        Self::write_entry(&mut self.bytes[at..], matrix, constraint, signal, value);
        self.len += 1;
    }

    /// Bytes of one entry whose value takes `value_len` bytes.
    pub const fn entry_len(value_len: usize) -> usize {
        12 + value_len
    }

    /// Writes `matrix[constraint][signal] += value` at the start of `dst` as
    /// [`Self::push`] appends it ([`Self::entry_len`] bytes): for filling many entries'
    /// places in parallel, then [`Self::from_encoded`].
    pub fn write_entry(dst: &mut [u8], matrix: Matrix, constraint: u32, signal: u32, value: &[u8]) {
        let m = match matrix {
            Matrix::A => 0u32,
            Matrix::B => 1,
        };
        for (i, x) in [m, constraint, signal].into_iter().enumerate() {
            dst[4 * i..4 * i + 4].copy_from_slice(&x.to_le_bytes());
        }
        dst[12..12 + value.len()].copy_from_slice(value);
    }

    /// `len` entries written one after another into `bytes` by [`Self::write_entry`].
    pub fn from_encoded(bytes: Vec<u8>, len: usize) -> Self {
        Self { bytes, len }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, encoded.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl<'a> FromIterator<Coefficient<'a>> for EncodedCoefficients {
    fn from_iter<I: IntoIterator<Item = Coefficient<'a>>>(iter: I) -> Self {
        let mut out = Self::default();
        for c in iter {
            out.push(c.matrix, c.constraint, c.signal, c.value);
        }
        out
    }
}

/// Everything a zkey holds, as raw bytes in file layout, for writing one.
#[derive(Debug, Clone)]
pub struct ZkeyContents {
    /// The Groth16 header.
    pub header: Groth16Header,
    /// Section 4's entries.
    pub coefficients: EncodedCoefficients,
    /// Section 3.
    pub ic: Vec<u8>,
    /// Section 5.
    pub a: Vec<u8>,
    /// Section 6.
    pub b1: Vec<u8>,
    /// Section 7.
    pub b2: Vec<u8>,
    /// Section 8.
    pub c: Vec<u8>,
    /// Section 9.
    pub h: Vec<u8>,
}

impl ZkeyContents {
    /// The file in snarkjs's section order, as slices to write one after another (the
    /// points and entries borrowed, not copied), with an empty contribution list (section
    /// 10: a 64-byte circuit hash left zero, then zero contributions).
    pub fn to_parts(&self) -> Vec<Cow<'_, [u8]>> {
        let mut w = ContainerParts::new(b"zkey", 1);
        w.section(
            section::PROTOCOL,
            vec![PROTOCOL_GROTH16.to_le_bytes().to_vec().into()],
        );
        let mut h = Vec::new();
        self.header.write(&mut h);
        w.section(section::HEADER, vec![h.into()]);
        w.section(section::IC, vec![self.ic.as_slice().into()]);
        let count = (self.coefficients.len() as u32).to_le_bytes();
        w.section(
            section::COEFFICIENTS,
            vec![count.to_vec().into(), self.coefficients.as_bytes().into()],
        );
        for (id, points) in [
            (section::A, &self.a),
            (section::B1, &self.b1),
            (section::B2, &self.b2),
            (section::C, &self.c),
            (section::H, &self.h),
        ] {
            w.section(id, vec![points.as_slice().into()]);
        }
        w.section(section::CONTRIBUTIONS, vec![vec![0u8; 68].into()]);
        w.finish()
    }

    /// The whole file in one buffer (small keys; [`Self::to_parts`] writes large ones).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_parts().concat()
    }
}
