//! Stage 1, reduce: the witness through the constraint matrices, a = A·w, b = B·w,
//! c = a∘b, evaluated at every row of the domain.
//!
//! Rows are inhomogeneous (a Poseidon round next to a one-term copy), so rows are handed
//! out in small chunks that idle threads claim (rayon's work stealing), not as one fixed
//! range per thread.

use crate::key::Csr;
use ark_ff::Field;
use rayon::prelude::*;

/// Rows per claimed chunk unless configured otherwise.
pub const DEFAULT_CHUNK_ROWS: usize = 64;

/// The three vectors a, b, c over the domain; after [`crate::quotient`], `a` holds h.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QapEvals<F> {
    /// A·w, then h after the quotient stage.
    pub a: Vec<F>,
    /// B·w.
    pub b: Vec<F>,
    /// (A·w)∘(B·w).
    pub c: Vec<F>,
}

impl<F: Field> QapEvals<F> {
    /// Zeroed buffers for a domain of `n` rows.
    pub fn zeroed(n: usize) -> Self {
        Self {
            a: vec![F::ZERO; n],
            b: vec![F::ZERO; n],
            c: vec![F::ZERO; n],
        }
    }

    /// The quotient evaluations, valid after the quotient stage.
    pub fn h(&self) -> &[F] {
        &self.a
    }
}

/// Computes a, b, c for every row into `out` (which must have the matrices' row count).
pub fn reduce<F: Field>(a: &Csr<F>, b: &Csr<F>, w: &[F], out: &mut QapEvals<F>, chunk_rows: usize) {
    let chunk = chunk_rows.max(1);
    out.a
        .par_chunks_mut(chunk)
        .zip(out.b.par_chunks_mut(chunk))
        .zip(out.c.par_chunks_mut(chunk))
        .enumerate()
        .for_each(|(k, ((oa, ob), oc))| {
            let first = k * chunk;
            for i in 0..oa.len() {
                let row = first + i;
                let (x, y) = (a.dot(row, w), b.dot(row, w));
                oa[i] = x;
                ob[i] = y;
                oc[i] = x * y;
            }
        });
}
