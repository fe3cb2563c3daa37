//! circom constraint systems (`.r1cs`, magic `r1cs`, version 1): section 1 header,
//! section 2 constraints (three linear combinations each), section 3 wire→label map.
//! Values are little-endian, standard form.

use crate::container::{Container, ContainerWriter, Reader};
use crate::curve::CurveId;
use crate::error::{Error, ErrorKind};
use crate::wtns::lt_le;
use std::path::Path;

const HEADER: u32 = 1;
const CONSTRAINTS: u32 = 2;
const WIRE_TO_LABEL: u32 = 3;

/// One term of a linear combination: `value · w[wire]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    /// Signal index.
    pub wire: u32,
    /// Coefficient, 32 bytes little-endian, standard form.
    pub value: [u8; 32],
}

/// The header of an r1cs file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct R1csHeader {
    /// The curve whose scalar field the constraints are over.
    pub curve: CurveId,
    /// Number of wires (signals), including the constant 1.
    pub n_wires: u32,
    /// Public outputs.
    pub n_pub_out: u32,
    /// Public inputs.
    pub n_pub_in: u32,
    /// Private inputs.
    pub n_prv_in: u32,
    /// Number of labels.
    pub n_labels: u64,
    /// Number of constraints.
    pub n_constraints: u32,
}

impl R1csHeader {
    /// Public signals as snarkjs counts them (outputs then public inputs); below nWires in
    /// a parsed header.
    pub fn n_public(&self) -> u32 {
        self.n_pub_out.saturating_add(self.n_pub_in)
    }
}

/// A constraint system: constraints `⟨A,w⟩·⟨B,w⟩ = ⟨C,w⟩`, stored flat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct R1cs {
    /// Header.
    pub header: R1csHeader,
    /// All terms of all linear combinations, in file order.
    pub terms: Vec<Term>,
    /// Where each linear combination starts in `terms`: 3 per constraint, plus the end.
    pub lc_starts: Vec<usize>,
    /// Label of each wire (section 3), empty if the file has none.
    pub wire_labels: Vec<u64>,
}

impl R1cs {
    /// Reads and validates an r1cs file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes = crate::files::read_input(path)?;
        Self::parse(&bytes).map_err(|k| Error::new(path, k))
    }

    /// Parses an r1cs from bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, ErrorKind> {
        let c = Container::parse(bytes, "r1cs", 1..=1, "1")?;
        let h = c.unique(HEADER, "header")?;
        let mut r = Reader::new(&bytes[..h.end], h.start, "r1cs header");
        let n8 = r.u32()? as usize;
        let prime = r.bytes(n8)?;
        let curve = CurveId::from_r_le(prime).ok_or_else(|| {
            ErrorKind::UnknownField(format!(
                "prime {} is neither BN254's nor BLS12-381's scalar field",
                crate::curve::le_to_decimal(prime)
            ))
        })?;
        let header = R1csHeader {
            curve,
            n_wires: r.u32()?,
            n_pub_out: r.u32()?,
            n_pub_in: r.u32()?,
            n_prv_in: r.u32()?,
            n_labels: r.u64()?,
            n_constraints: r.u32()?,
        };
        let n_public = header.n_pub_out as u64 + header.n_pub_in as u64;
        if n_public >= header.n_wires as u64 {
            return Err(ErrorKind::InvalidHeader(format!(
                "{n_public} public signals but only {} wires",
                header.n_wires
            )));
        }
        let cs = c.unique(CONSTRAINTS, "constraints")?;
        let mut r = Reader::new(&bytes[..cs.end], cs.start, "constraint");
        let modulus = curve.r_le();
        let mut terms = Vec::new();
        // The header's count is not trusted for the allocation: every linear combination
        // takes at least its 4-byte length, so the section bounds how many there can be.
        let n_lcs = 3 * header.n_constraints as usize;
        let mut lc_starts = Vec::with_capacity(n_lcs.min(cs.len() / 4) + 1);
        for i in 0..header.n_constraints as u64 {
            for _ in 0..3 {
                lc_starts.push(terms.len());
                let n = r.u32()?;
                for _ in 0..n {
                    let wire = r.u32()?;
                    let v = r.bytes(n8)?;
                    let bad = |why: String| ErrorKind::InvalidRecord {
                        what: "constraint",
                        index: i,
                        why,
                    };
                    if wire >= header.n_wires {
                        return Err(bad(format!("wire {wire} ≥ nWires {}", header.n_wires)));
                    }
                    if !lt_le(v, &modulus) {
                        return Err(bad("coefficient not below the field modulus".into()));
                    }
                    let mut value = [0u8; 32];
                    value.copy_from_slice(v);
                    terms.push(Term { wire, value });
                }
            }
        }
        lc_starts.push(terms.len());
        if r.pos != cs.end {
            return Err(ErrorKind::SectionSize {
                id: CONSTRAINTS,
                name: "constraints",
                expected: (r.pos - cs.start) as u64,
                found: cs.len() as u64,
            });
        }
        let wire_labels = match c.unique(WIRE_TO_LABEL, "wire labels") {
            Ok(range) => {
                let mut r = Reader::new(&bytes[..range.end], range.start, "wire labels");
                (0..header.n_wires)
                    .map(|_| r.u64())
                    .collect::<Result<_, _>>()?
            }
            Err(ErrorKind::MissingSection { .. }) => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(Self {
            header,
            terms,
            lc_starts,
            wire_labels,
        })
    }

    /// The three linear combinations (A, B, C) of constraint `i`.
    pub fn constraint(&self, i: usize) -> [&[Term]; 3] {
        let s = &self.lc_starts[3 * i..3 * i + 4];
        [
            &self.terms[s[0]..s[1]],
            &self.terms[s[1]..s[2]],
            &self.terms[s[2]..s[3]],
        ]
    }

    /// Serializes as circom writes it (header, constraints, wire→label map).
    pub fn to_bytes(&self) -> Vec<u8> {
        let h = &self.header;
        let mut w = ContainerWriter::new(b"r1cs", 1);
        let r = h.curve.r_le();
        let mut hb = Vec::new();
        hb.extend_from_slice(&(r.len() as u32).to_le_bytes());
        hb.extend_from_slice(&r);
        for v in [h.n_wires, h.n_pub_out, h.n_pub_in, h.n_prv_in] {
            hb.extend_from_slice(&v.to_le_bytes());
        }
        hb.extend_from_slice(&h.n_labels.to_le_bytes());
        hb.extend_from_slice(&h.n_constraints.to_le_bytes());
        w.section(HEADER, &hb);
        let mut cb = Vec::new();
        for i in 0..h.n_constraints as usize {
            for lc in self.constraint(i) {
                cb.extend_from_slice(&(lc.len() as u32).to_le_bytes());
                for t in lc {
                    cb.extend_from_slice(&t.wire.to_le_bytes());
                    cb.extend_from_slice(&t.value);
                }
            }
        }
        w.section(CONSTRAINTS, &cb);
        let labels: Vec<u8> = if self.wire_labels.is_empty() {
            (0..h.n_wires as u64).flat_map(u64::to_le_bytes).collect()
        } else {
            self.wire_labels
                .iter()
                .flat_map(|l| l.to_le_bytes())
                .collect()
        };
        w.section(WIRE_TO_LABEL, &labels);
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_bad_wires() {
        let one = {
            let mut v = [0u8; 32];
            v[0] = 1;
            v
        };
        let t = |wire| Term { wire, value: one };
        let r1cs = R1cs {
            header: R1csHeader {
                curve: CurveId::Bls12_381,
                n_wires: 4,
                n_pub_out: 1,
                n_pub_in: 1,
                n_prv_in: 1,
                n_labels: 4,
                n_constraints: 1,
            },
            terms: vec![t(2), t(3), t(1)],
            lc_starts: vec![0, 1, 2, 3],
            wire_labels: vec![0, 1, 2, 3],
        };
        let bytes = r1cs.to_bytes();
        assert_eq!(R1cs::parse(&bytes).unwrap(), r1cs);
        // Found by fuzzing: a header claiming 2^31 constraints made the parser reserve
        // 48 GiB up front, and the process abort when it could not.
        let mut huge = bytes.clone();
        // Container header 12, section header 12, n8 4, prime 32, four u32 counts, n_labels.
        let at = 12 + 12 + 4 + 32 + 16 + 8;
        assert_eq!(huge[at..at + 4], 1u32.to_le_bytes());
        huge[at..at + 4].copy_from_slice(&0x8000_0001u32.to_le_bytes());
        assert!(matches!(
            R1cs::parse(&huge),
            Err(ErrorKind::Truncated { .. })
        ));
        // Found by fuzzing: public outputs + public inputs overflowed u32 (a panic with
        // overflow checks on; in release the sum wrapped and passed the check).
        let mut wrap = bytes.clone();
        let (out, inp) = (12 + 12 + 4 + 32 + 4, 12 + 12 + 4 + 32 + 8);
        wrap[out..out + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        wrap[inp..inp + 4].copy_from_slice(&2u32.to_le_bytes());
        assert!(matches!(
            R1cs::parse(&wrap),
            Err(ErrorKind::InvalidHeader(_))
        ));
        let mut bad = r1cs.clone();
        bad.terms[0].wire = 9;
        assert!(matches!(
            R1cs::parse(&bad.to_bytes()),
            Err(ErrorKind::InvalidRecord { .. })
        ));
    }
}
