pragma circom 2.0.0;

// zkpipe benchmark circuit: circomlib's Sha256(512) over a 64-byte private message,
// i.e. two SHA-256 compression blocks (the message block plus the padding block that
// holds the 0x80 byte and the 512-bit length). Unlike the Poseidon chains (whose
// witness is ~100% full-size field elements), every wire of this circuit is a bit: after
// --O2 folds the adders' linear sums away, all 59,170 witness values are 0 or 1, as in
// the bit-heavy parts of real circom circuits (hashes, range checks, comparators).
//
//   in[512]   private: the message bits, MSB first within each byte (circomlib order:
//             in[8*i + j] = bit 7-j of byte i)
//   out[256]  public outputs: the digest bits, same order (out[0] = MSB of byte 0)
//
// All 256 digest bits are public (no Bits2Num packing), so nPublic = 256: a realistic
// "hash as public bits" statement, and a vk with 257 IC points. 59,281 constraints and
// 59,170 wires after `circom --O2` (circom 2.2.3, circomlib 2.0.5), so constraints +
// nPublic + 1 = 59,538 <= 65,536 and the Groth16 domain is 2^16. circomlib's SHA-256 is
// pure bit arithmetic (no field constants), so it is the same standard SHA-256 under
// --prime bn128 and bls12381 (same r1cs shape, same witness, same digest).
//
// Public signals (snarkjs order): out[0..255]. Input: sha256_512.input.json.
include "circomlib/circuits/sha256/sha256.circom";

component main = Sha256(512);
