//! Witnesses for the stores' tests (the unit tests here and the suite in `tests/`), which
//! both check that witnesses are stored packed and read back as stored.

use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::CurveId;

/// A BN254 `.wtns` of `n` values, each 0 or 1 (`bits`, as a circom witness's mostly are)
/// or the same full-size one (which does not pack).
pub fn wtns(n: usize, bits: bool) -> Vec<u8> {
    let values = (0..n)
        .flat_map(|i| {
            let mut v = [0u8; 32];
            if bits {
                v[0] = (i % 2) as u8;
            } else {
                v[..31].fill(0x5a);
            }
            v
        })
        .collect();
    Wtns {
        curve: CurveId::Bn254,
        n_witness: n as u32,
        values,
    }
    .to_bytes()
}
