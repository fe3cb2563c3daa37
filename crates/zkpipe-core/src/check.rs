//! Checks a witness against an r1cs directly, naming the first unsatisfied constraint:
//! a better diagnosis than a proof that fails its self-check.

use crate::curve::{field_from_le, Curve};
use crate::error::Error;
use crate::witness::Witness;
use ark_ff::Field;
use rayon::prelude::*;
use zkpipe_formats::r1cs::{R1cs, Term};
use zkpipe_formats::wtns::Wtns;

/// Ok if every constraint ⟨A,w⟩·⟨B,w⟩ = ⟨C,w⟩ holds; else the first that does not.
pub fn check_r1cs<E: Curve>(r1cs: &R1cs, wtns: &Wtns) -> Result<(), Error> {
    if wtns.curve != r1cs.header.curve {
        return Err(Error::CurveMismatch {
            what: "witness",
            found: wtns.curve,
            expected: r1cs.header.curve,
        });
    }
    if wtns.n_witness != r1cs.header.n_wires {
        return Err(Error::WireCount {
            expected: r1cs.header.n_wires as usize,
            found: wtns.n_witness as usize,
        });
    }
    let w = Witness::<E::ScalarField>::from_wtns(wtns)?.values;
    if w.first() != Some(&E::ScalarField::ONE) {
        return Err(Error::ConstraintUnsatisfied {
            index: 0,
            detail: "witness value 0 must be the constant 1".into(),
        });
    }
    let lc = |terms: &[Term]| -> E::ScalarField {
        terms
            .iter()
            .map(|t| {
                field_from_le::<E::ScalarField>(&t.value).unwrap_or_default() * w[t.wire as usize]
            })
            .sum()
    };
    let failing = (0..r1cs.header.n_constraints as usize)
        .into_par_iter()
        .find_first(|&i| {
            let [a, b, c] = r1cs.constraint(i);
            lc(a) * lc(b) != lc(c)
        });
    match failing {
        None => Ok(()),
        Some(index) => {
            let [a, b, c] = r1cs.constraint(index);
            Err(Error::ConstraintUnsatisfied {
                index,
                detail: format!("A·w = {}, B·w = {}, C·w = {}", lc(a), lc(b), lc(c)),
            })
        }
    }
}
