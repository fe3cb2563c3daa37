//! Which curve a file belongs to, as snarkjs identifies it: by the primes in its header.

use std::fmt;

/// A pairing-friendly curve that snarkjs supports and zkpipe proves on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CurveId {
    /// BN254 (alt_bn128), snarkjs's `bn128`.
    Bn254,
    /// BLS12-381, snarkjs's `bls12381`.
    Bls12_381,
}

// Moduli as big-endian hex; converted to little-endian bytes where compared.
const BN254_Q: &str = "30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47";
const BN254_R: &str = "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001";
const BLS12_381_Q: &str = "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab";
const BLS12_381_R: &str = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";

impl CurveId {
    /// Both curves, in a fixed order.
    pub const ALL: [CurveId; 2] = [CurveId::Bn254, CurveId::Bls12_381];

    /// The name snarkjs writes in `curve` fields of proof and key JSON.
    pub fn snarkjs_name(self) -> &'static str {
        match self {
            CurveId::Bn254 => "bn128",
            CurveId::Bls12_381 => "bls12381",
        }
    }

    /// Parses a snarkjs curve name (also accepts the common aliases).
    pub fn from_snarkjs_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "bn128" | "bn254" | "alt_bn128" => Some(CurveId::Bn254),
            "bls12381" | "bls12-381" | "bls12_381" => Some(CurveId::Bls12_381),
            _ => None,
        }
    }

    /// Bytes of a base-field element (n8q).
    pub fn n8q(self) -> usize {
        match self {
            CurveId::Bn254 => 32,
            CurveId::Bls12_381 => 48,
        }
    }

    /// Bytes of a scalar-field element (n8r).
    pub fn n8r(self) -> usize {
        32
    }

    /// Bytes of an affine G1 point in snarkjs files (x, y).
    pub fn g1_bytes(self) -> usize {
        2 * self.n8q()
    }

    /// Bytes of an affine G2 point in snarkjs files (x.c0, x.c1, y.c0, y.c1).
    pub fn g2_bytes(self) -> usize {
        4 * self.n8q()
    }

    /// The base-field modulus q, little-endian, n8q bytes.
    pub fn q_le(self) -> Vec<u8> {
        hex_to_le(
            match self {
                CurveId::Bn254 => BN254_Q,
                CurveId::Bls12_381 => BLS12_381_Q,
            },
            self.n8q(),
        )
    }

    /// The scalar-field modulus r, little-endian, n8r bytes.
    pub fn r_le(self) -> Vec<u8> {
        hex_to_le(
            match self {
                CurveId::Bn254 => BN254_R,
                CurveId::Bls12_381 => BLS12_381_R,
            },
            self.n8r(),
        )
    }

    /// The curve whose base field has this modulus.
    pub fn from_q_le(q: &[u8]) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.q_le() == q)
    }

    /// The curve whose scalar field has this modulus.
    pub fn from_r_le(r: &[u8]) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.r_le() == r)
    }
}

impl fmt::Display for CurveId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CurveId::Bn254 => "BN254",
            CurveId::Bls12_381 => "BLS12-381",
        })
    }
}

fn hex_to_le(hex: &str, n: usize) -> Vec<u8> {
    let digits: Vec<u8> = hex
        .bytes()
        .map(|c| (c as char).to_digit(16).unwrap_or(0) as u8)
        .collect();
    let mut out = vec![0u8; n];
    for (i, pair) in digits.rchunks(2).enumerate() {
        out[i] = pair.iter().fold(0u8, |acc, d| acc * 16 + d);
    }
    out
}

/// Renders a little-endian unsigned integer in decimal (for messages and `inspect`).
pub fn le_to_decimal(le: &[u8]) -> String {
    // Repeated division by 10^9 over base-2^32 limbs: small and dependency-free.
    let mut limbs: Vec<u32> = le
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    let mut parts = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem = 0u64;
        for l in limbs.iter_mut().rev() {
            let cur = (rem << 32) | *l as u64;
            *l = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        parts.push(rem as u32);
    }
    match parts.split_last() {
        None => "0".to_string(),
        Some((top, rest)) => {
            let mut s = top.to_string();
            for p in rest.iter().rev() {
                s.push_str(&format!("{p:09}"));
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moduli_round_trip_through_identification() {
        for c in CurveId::ALL {
            assert_eq!(CurveId::from_q_le(&c.q_le()), Some(c));
            assert_eq!(CurveId::from_r_le(&c.r_le()), Some(c));
            assert_eq!(CurveId::from_snarkjs_name(c.snarkjs_name()), Some(c));
        }
        assert_eq!(CurveId::from_r_le(&CurveId::Bn254.q_le()), None);
    }

    #[test]
    fn decimal_rendering() {
        assert_eq!(
            le_to_decimal(&CurveId::Bn254.r_le()),
            "21888242871839275222246405745257275088548364400416034343698204186575808495617"
        );
        assert_eq!(le_to_decimal(&[0, 0]), "0");
        assert_eq!(le_to_decimal(&[10]), "10");
    }
}
