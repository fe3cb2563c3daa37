pragma circom 2.0.0;

// zkpipe witness-synthesis benchmark circuits (experiment 016): a hash chain of N
// circomlib Poseidon(2) instances, 240 constraints each after `circom --O2`
// (circomlib 2.0.5). The main files poseidon_chain_2e{14,16,20}.circom pick N so
// that constraints + nPublic + 1 fills the Groth16 domain 2^k:
//
//   N =   68 ->    16,320 constraints (domain 2^14)
//   N =  272 ->    65,280 constraints (domain 2^16)
//   N = 4369 -> 1,048,560 constraints (domain 2^20)
//
//   acc_0 = seed, acc_{i+1} = Poseidon(acc_i, secret + i), hash = acc_N
//
// Public signals (snarkjs order): [hash, seed]. Same template as
// poseidon_chain_64k.circom (which is N = 250).
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
