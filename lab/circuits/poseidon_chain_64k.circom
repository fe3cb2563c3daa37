pragma circom 2.0.0;

// zkpipe benchmark circuit: a hash chain of N circomlib Poseidon(2) instances,
// 240 constraints each after `circom --O2` (circomlib 2.0.5), i.e. 60,000
// constraints for N = 250. With 2 public signals the Groth16 domain is 2^16
// (constraints + nPublic + 1 = 60,003 <= 65,536).
//
//   acc_0 = seed, acc_{i+1} = Poseidon(acc_i, secret + i), hash = acc_N
//
// Public signals (snarkjs order): [hash, seed]
//
// Note: circomlib's Poseidon constants are for the BN254 scalar field; compiled
// with --prime bls12381 this is a valid constraint system of the same shape but
// not a standard Poseidon over that field (fine for benchmarking).
include "circomlib/circuits/poseidon.circom";

template PoseidonChain(N) {
    signal input seed;      // public
    signal input secret;    // private
    signal output hash;     // public output

    component h[N];
    signal acc[N + 1];
    acc[0] <== seed;
    for (var i = 0; i < N; i++) {
        h[i] = Poseidon(2);
        h[i].inputs[0] <== acc[i];
        h[i].inputs[1] <== secret + i;
        acc[i + 1] <== h[i].out;
    }
    hash <== acc[N];
}

component main {public [seed]} = PoseidonChain(250);
