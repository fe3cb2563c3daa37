pragma circom 2.0.0;
// Domain 2^14: 68 Poseidon(2) hashes (see poseidon_chain.circom).
include "poseidon_chain.circom";

component main {public [seed]} = PoseidonChain(68);
