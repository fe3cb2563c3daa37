//! On-chain verification: a Solidity verifier contract made from `verification_key.json`,
//! and the calldata of one proof for it, made from `proof.json` and `public.json`.
//!
//! ```text
//!  VerificationKeyJson ──verifier()────────────► Verifier.sol   (contract Groth16Verifier)
//!  ProofJson ──ProofCalldata::from_json()──┐
//!  PublicJson ──public_calldata()──────────┴► ProofCalldata::render() ► "[a],[[b],[b]],[c],[pub]"
//! ```
//!
//! Both follow snarkjs 0.7.6 (`zkey export solidityverifier` / `soliditycalldata`) so that
//! either tool's calldata works with either tool's contract: the same contract name, the
//! same `verifyProof(uint[2], uint[2][2], uint[2], uint[nPublic])` interface and
//! behaviour, and calldata text identical byte for byte. The contract text is zkpipe's own
//! (MIT), not snarkjs's template.
//!
//! Only BN254 has pairing precompiles on the EVM (EIP-196/197: ecAdd 0x06, ecMul 0x07,
//! ecPairing 0x08); a BLS12-381 key or proof is refused with [`ErrorKind::NotEvmCurve`].
//! G2 coordinates are written the way EIP-197 reads them: imaginary part first, which is
//! the reverse of snarkjs's JSON (`[c0, c1]`).

use crate::curve::le_to_decimal;
use crate::error::ErrorKind;
use crate::json::{G1Json, G2Json, ProofJson, VerificationKeyJson};
use crate::CurveId;
use std::fmt::Write as _;

/// A 256-bit unsigned integer, read from a decimal string (little-endian bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uint256([u8; 32]);

impl Uint256 {
    /// Parses a decimal string (digits only, leading zeros allowed); `None` when it is not
    /// one or does not fit in 256 bits.
    pub fn from_decimal(s: &str) -> Option<Self> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut le = [0u8; 32];
        for d in s.bytes() {
            // le = le * 10 + d, failing on a carry out of the top byte.
            let mut carry = u32::from(d - b'0');
            for byte in le.iter_mut() {
                let v = u32::from(*byte) * 10 + carry;
                *byte = v as u8;
                carry = v >> 8;
            }
            if carry != 0 {
                return None;
            }
        }
        Some(Self(le))
    }

    /// The value in decimal without leading zeros (a Solidity literal: Solidity rejects
    /// leading zeros as octal).
    pub fn to_decimal(&self) -> String {
        le_to_decimal(&self.0)
    }

    /// The value as snarkjs's calldata writes it: `"0x"` and 64 lowercase hex digits, quoted.
    pub fn to_calldata(&self) -> String {
        let mut s = String::with_capacity(68);
        s.push_str("\"0x");
        for b in self.0.iter().rev() {
            let _ = write!(s, "{b:02x}");
        }
        s.push('"');
        s
    }
}

/// A coordinate of a JSON point, as a [`Uint256`].
fn coordinate(what: &str, s: &str) -> Result<Uint256, ErrorKind> {
    Uint256::from_decimal(s).ok_or_else(|| {
        ErrorKind::Json(format!("{what}: {s:?} is not a decimal number below 2^256"))
    })
}

/// (x, y) of a G1 point written `[x, y]` or `[x, y, z]` (z is ignored, as snarkjs does).
fn g1(what: &str, p: &G1Json) -> Result<[Uint256; 2], ErrorKind> {
    if !(2..=3).contains(&p.len()) {
        return Err(ErrorKind::Json(format!(
            "{what}: a G1 point has 2 or 3 coordinates, found {}",
            p.len()
        )));
    }
    Ok([coordinate(what, &p[0])?, coordinate(what, &p[1])?])
}

/// (x, y) of a G2 point, each in EIP-197 order `[c1, c0]` (snarkjs's JSON has `[c0, c1]`).
fn g2(what: &str, p: &G2Json) -> Result<[[Uint256; 2]; 2], ErrorKind> {
    if !(2..=3).contains(&p.len()) || p[..2].iter().any(|c| c.len() != 2) {
        return Err(ErrorKind::Json(format!(
            "{what}: a G2 point is [[x.c0, x.c1], [y.c0, y.c1]] (and optionally z)"
        )));
    }
    let fq2 = |c: &Vec<String>| -> Result<[Uint256; 2], ErrorKind> {
        Ok([coordinate(what, &c[1])?, coordinate(what, &c[0])?])
    };
    Ok([fq2(&p[0])?, fq2(&p[1])?])
}

/// Refuses a curve the EVM cannot verify on. `None` (a proof without a `curve` field, as
/// rapidsnark writes) is taken as BN254.
fn check_evm_curve(curve: Option<&str>) -> Result<(), ErrorKind> {
    let Some(name) = curve else {
        return Ok(());
    };
    match CurveId::from_snarkjs_name(name) {
        Some(CurveId::Bn254) => Ok(()),
        Some(other) => Err(ErrorKind::NotEvmCurve(other)),
        None => Err(ErrorKind::Json(format!("unknown curve {name:?}"))),
    }
}

/// Refuses a protocol other than Groth16.
fn check_groth16(protocol: &str) -> Result<(), ErrorKind> {
    if protocol == "groth16" {
        Ok(())
    } else {
        Err(ErrorKind::Json(format!(
            "protocol is {protocol:?}, expected \"groth16\""
        )))
    }
}

/// One proof's π_A, π_B, π_C as `verifyProof` takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofCalldata {
    a: [Uint256; 2],
    b: [[Uint256; 2]; 2],
    c: [Uint256; 2],
}

impl ProofCalldata {
    /// Reads a `proof.json` (snarkjs's or rapidsnark's): protocol Groth16, curve BN254 or
    /// absent, every coordinate a decimal below 2^256. Points are not checked to be on the
    /// curve (neither does snarkjs): the contract's precompiles reject those that are not.
    pub fn from_json(proof: &ProofJson) -> Result<Self, ErrorKind> {
        check_groth16(&proof.protocol)?;
        check_evm_curve(proof.curve.as_deref())?;
        Ok(Self {
            a: g1("pi_a", &proof.pi_a)?,
            b: g2("pi_b", &proof.pi_b)?,
            c: g1("pi_c", &proof.pi_c)?,
        })
    }

    /// The calldata text, exactly as `snarkjs zkey export soliditycalldata` prints it (less
    /// the final newline): `[a0, a1],[[b00, b01],[b10, b11]],[c0, c1],[p0,p1,…]`.
    pub fn render(&self, public: &[Uint256]) -> String {
        let pair = |p: &[Uint256; 2]| format!("[{}, {}]", p[0].to_calldata(), p[1].to_calldata());
        let public: Vec<String> = public.iter().map(Uint256::to_calldata).collect();
        format!(
            "{},[{},{}],{},[{}]",
            pair(&self.a),
            pair(&self.b[0]),
            pair(&self.b[1]),
            pair(&self.c),
            public.join(",")
        )
    }
}

/// Reads `public.json`'s signals as calldata words (decimals below 2^256; the contract
/// itself returns false for one not below the scalar field modulus).
pub fn public_calldata(public: &[String]) -> Result<Vec<Uint256>, ErrorKind> {
    public
        .iter()
        .enumerate()
        .map(|(i, s)| coordinate(&format!("public signal {i}"), s))
        .collect()
}

/// BN254's scalar field modulus r (public signals must be below it).
const BN254_R: &str =
    "21888242871839275222246405745257275088548364400416034343698204186575808495617";
/// BN254's base field modulus q.
const BN254_Q: &str =
    "21888242871839275222246405745257275088696311157297823662689037894645226208583";

/// The Solidity source of a verifier contract for one BN254 verification key.
///
/// The contract is `Groth16Verifier` with snarkjs's interface
/// `verifyProof(uint[2] _pA, uint[2][2] _pB, uint[2] _pC, uint[nPublic] _pubSignals)
/// returns (bool)`: it returns false, never reverts, for a proof that does not verify, a
/// public signal not below r, or a point a precompile rejects. Errors: a curve other than
/// BN254 ([`ErrorKind::NotEvmCurve`]), a key with no public signals
/// ([`ErrorKind::NoPublicSignals`]: `uint[0]` is not valid Solidity), or a malformed key
/// ([`ErrorKind::Json`]). The points themselves are
/// not checked here; callers that read untrusted keys should check them first.
pub fn verifier(vk: &VerificationKeyJson) -> Result<String, ErrorKind> {
    check_evm_curve(Some(&vk.curve))?;
    check_groth16(&vk.protocol)?;
    if vk.ic.len().checked_sub(1).map(|n| n as u64) != Some(vk.n_public) {
        return Err(ErrorKind::Json(format!(
            "IC has {} points, nPublic = {} needs nPublic + 1",
            vk.ic.len(),
            vk.n_public
        )));
    }
    if vk.n_public == 0 {
        return Err(ErrorKind::NoPublicSignals);
    }
    let alpha = g1("vk_alpha_1", &vk.vk_alpha_1)?;
    let beta = g2("vk_beta_2", &vk.vk_beta_2)?;
    let gamma = g2("vk_gamma_2", &vk.vk_gamma_2)?;
    let delta = g2("vk_delta_2", &vk.vk_delta_2)?;
    let ic = vk
        .ic
        .iter()
        .enumerate()
        .map(|(i, p)| g1(&format!("IC[{i}]"), p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(render_verifier(&alpha, &[beta, gamma, delta], &ic))
}

/// Writes the contract; `g2s` is β, γ, δ.
fn render_verifier(
    alpha: &[Uint256; 2],
    g2s: &[[[Uint256; 2]; 2]; 3],
    ic: &[[Uint256; 2]],
) -> String {
    let n = ic.len() - 1;
    let mut s = String::new();
    // `write!` into a String cannot fail; the results are ignored below.
    let _ = write!(
        s,
        "// SPDX-License-Identifier: MIT
// Groth16 verifier for one BN254 verification key ({n} public signals), generated by
// zkpipe {version} (`zkpipe export solidityverifier`).
//
// Same interface as the contract `snarkjs zkey export solidityverifier` writes: it takes
// the calldata that `zkpipe export soliditycalldata` or `snarkjs zkey export
// soliditycalldata` prints. verifyProof returns false, and does not revert, when the proof
// does not verify, when a public signal is not below the scalar field modulus, or when a
// point is not on the curve.
pragma solidity ^0.8.0;

contract Groth16Verifier {{
    // BN254 scalar field modulus: every public signal must be below it.
    uint256 constant R = {BN254_R};
    // BN254 base field modulus, for negating pi_A.
    uint256 constant Q = {BN254_Q};

    // The verification key. G2 points are (x, y) with each coordinate written as the
    // pairing precompile reads it: imaginary part first (IM, RE).
",
        version = env!("CARGO_PKG_VERSION"),
    );
    let _ = writeln!(
        s,
        "    uint256 constant ALPHA_X = {};",
        alpha[0].to_decimal()
    );
    let _ = writeln!(
        s,
        "    uint256 constant ALPHA_Y = {};",
        alpha[1].to_decimal()
    );
    for (name, p) in ["BETA", "GAMMA", "DELTA"].iter().zip(g2s) {
        for (axis, c) in ["X", "Y"].iter().zip(p) {
            for (part, v) in ["IM", "RE"].iter().zip(c) {
                let _ = writeln!(
                    s,
                    "    uint256 constant {name}_{axis}_{part} = {};",
                    v.to_decimal()
                );
            }
        }
    }
    s.push_str("\n    // IC: the public-input point is IC0 + sum of pubSignals[i - 1] * ICi.\n");
    for (i, p) in ic.iter().enumerate() {
        let _ = writeln!(s, "    uint256 constant IC{i}_X = {};", p[0].to_decimal());
        let _ = writeln!(s, "    uint256 constant IC{i}_Y = {};", p[1].to_decimal());
    }
    let _ = write!(
        s,
        "
    /// @notice Checks a Groth16 proof (A, B, C) for these public signals: true when
    /// e(-A, B) * e(ALPHA, BETA) * e(L, GAMMA) * e(C, DELTA) = 1, L the public-input point.
    function verifyProof(
        uint[2] calldata _pA,
        uint[2][2] calldata _pB,
        uint[2] calldata _pC,
        uint[{n}] calldata _pubSignals
    ) public view returns (bool) {{
        for (uint256 i = 0; i < _pubSignals.length; i++) {{
            if (_pubSignals[i] >= R) {{
                return false;
            }}
        }}

        uint256[2] memory l = [IC0_X, IC0_Y];
        uint256[4] memory scratch;
"
    );
    for i in 1..=n {
        let _ = writeln!(
            s,
            "        if (!mulAcc(l, scratch, IC{i}_X, IC{i}_Y, _pubSignals[{}])) return false;",
            i - 1
        );
    }
    s.push_str(
        "
        uint256[24] memory input;
        input[0] = _pA[0];
        // -A: the same arithmetic as snarkjs's verifier, also for a y that is not below Q.
        unchecked {
            input[1] = (Q - _pA[1]) % Q;
        }
        input[2] = _pB[0][0];
        input[3] = _pB[0][1];
        input[4] = _pB[1][0];
        input[5] = _pB[1][1];
        input[6] = ALPHA_X;
        input[7] = ALPHA_Y;
        input[8] = BETA_X_IM;
        input[9] = BETA_X_RE;
        input[10] = BETA_Y_IM;
        input[11] = BETA_Y_RE;
        input[12] = l[0];
        input[13] = l[1];
        input[14] = GAMMA_X_IM;
        input[15] = GAMMA_X_RE;
        input[16] = GAMMA_Y_IM;
        input[17] = GAMMA_Y_RE;
        input[18] = _pC[0];
        input[19] = _pC[1];
        input[20] = DELTA_X_IM;
        input[21] = DELTA_X_RE;
        input[22] = DELTA_Y_IM;
        input[23] = DELTA_Y_RE;
        return pairingIsOne(input);
    }

    /// acc += s * (x, y), with the ecMul (0x07) and ecAdd (0x06) precompiles; false when
    /// either rejects its input. `scratch` is 4 words of working memory.
    function mulAcc(
        uint256[2] memory acc,
        uint256[4] memory scratch,
        uint256 x,
        uint256 y,
        uint256 s
    ) private view returns (bool ok) {
        scratch[0] = x;
        scratch[1] = y;
        scratch[2] = s;
        /// @solidity memory-safe-assembly
        assembly {
            ok := staticcall(gas(), 0x07, scratch, 0x60, scratch, 0x40)
        }
        if (!ok) {
            return false;
        }
        scratch[2] = acc[0];
        scratch[3] = acc[1];
        /// @solidity memory-safe-assembly
        assembly {
            ok := staticcall(gas(), 0x06, scratch, 0x80, acc, 0x40)
        }
    }

    /// Runs the ecPairing precompile (0x08) on four (G1, G2) pairs: true when it succeeds
    /// and the product of the pairings is one.
    function pairingIsOne(uint256[24] memory input) private view returns (bool) {
        uint256[1] memory out;
        bool ok;
        /// @solidity memory-safe-assembly
        assembly {
            ok := staticcall(gas(), 0x08, input, 0x300, out, 0x20)
        }
        return ok && out[0] == 1;
    }
}
",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proof() -> ProofJson {
        ProofJson {
            pi_a: vec!["1".into(), "2".into(), "1".into()],
            pi_b: vec![
                vec!["3".into(), "4".into()],
                vec!["5".into(), "6".into()],
                vec!["1".into(), "0".into()],
            ],
            pi_c: vec!["7".into(), "255".into(), "1".into()],
            protocol: "groth16".into(),
            curve: Some("bn128".into()),
        }
    }

    #[test]
    fn numbers_parse_and_render_like_snarkjs() {
        let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        let v = Uint256::from_decimal(max).unwrap();
        assert_eq!(v.to_calldata(), format!("\"0x{}\"", "f".repeat(64)));
        assert_eq!(v.to_decimal(), max);
        let over = "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        assert_eq!(Uint256::from_decimal(over), None);
        assert_eq!(Uint256::from_decimal("0007").unwrap().to_decimal(), "7");
        assert_eq!(
            Uint256::from_decimal("0").unwrap().to_calldata(),
            format!("\"0x{}\"", "0".repeat(64))
        );
        for bad in ["", "-1", "0x10", "1e3", " 1"] {
            assert_eq!(Uint256::from_decimal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn calldata_swaps_g2_components_and_spaces_like_snarkjs() {
        let w = |n: u8| format!("\"0x{}{:02x}\"", "0".repeat(62), n);
        let public = public_calldata(&["9".into(), "10".into()]).unwrap();
        let text = ProofCalldata::from_json(&proof()).unwrap().render(&public);
        let expected = format!(
            "[{}, {}],[[{}, {}],[{}, {}]],[{}, {}],[{},{}]",
            w(1),
            w(2),
            w(4),
            w(3),
            w(6),
            w(5),
            w(7),
            w(255),
            w(9),
            w(10)
        );
        assert_eq!(text, expected);
        assert!(ProofCalldata::from_json(&proof())
            .unwrap()
            .render(&[])
            .ends_with(",[]"));
    }

    #[test]
    fn calldata_takes_proofs_without_curve_and_refuses_other_curves() {
        let mut p = proof();
        p.curve = None;
        assert!(ProofCalldata::from_json(&p).is_ok());
        p.curve = Some("bls12381".into());
        let e = ProofCalldata::from_json(&p).unwrap_err();
        assert!(matches!(e, ErrorKind::NotEvmCurve(_)), "{e}");
        let mut p = proof();
        p.protocol = "plonk".into();
        assert!(ProofCalldata::from_json(&p).is_err());
        let mut p = proof();
        p.pi_b.truncate(1);
        assert!(ProofCalldata::from_json(&p).is_err());
        assert!(public_calldata(&["12a".into()]).is_err());
    }

    fn vk(curve: &str, n_public: u64) -> VerificationKeyJson {
        let g1 = || vec!["1".to_string(), "2".to_string(), "1".to_string()];
        let g2 = || {
            vec![
                vec!["11".to_string(), "12".to_string()],
                vec!["13".to_string(), "14".to_string()],
                vec!["1".to_string(), "0".to_string()],
            ]
        };
        VerificationKeyJson {
            protocol: "groth16".into(),
            curve: curve.into(),
            n_public,
            vk_alpha_1: g1(),
            vk_beta_2: g2(),
            vk_gamma_2: g2(),
            vk_delta_2: g2(),
            vk_alphabeta_12: Vec::new(),
            ic: (0..=n_public).map(|_| g1()).collect(),
        }
    }

    #[test]
    fn verifier_has_snarkjs_interface_and_refuses_what_the_evm_cannot_check() {
        let sol = verifier(&vk("bn128", 3)).unwrap();
        assert!(sol.starts_with("// SPDX-License-Identifier: MIT\n"));
        assert!(sol.contains("contract Groth16Verifier {"));
        assert!(sol.contains("uint[3] calldata _pubSignals"));
        assert!(sol.contains("uint256 constant BETA_X_IM = 12;"));
        assert!(sol.contains("uint256 constant BETA_X_RE = 11;"));
        assert!(sol.contains("uint256 constant IC3_Y = 2;"));
        assert!(sol.contains("_pubSignals[2])) return false;"));
        assert!(!sol.contains("_pubSignals[3]"));

        let e = verifier(&vk("bls12381", 3)).unwrap_err();
        assert!(matches!(e, ErrorKind::NotEvmCurve(_)), "{e}");
        let e = verifier(&vk("bn128", 0)).unwrap_err();
        assert!(matches!(e, ErrorKind::NoPublicSignals), "{e}");
        let mut bad = vk("bn128", 2);
        bad.ic.pop();
        assert!(verifier(&bad).is_err());
    }
}
