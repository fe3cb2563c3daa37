//! The compiled key's sparse matrices (A and B) in compressed-row form: what the reduce
//! stage multiplies the witness by.

use ark_ff::Field;

/// A sparse matrix in compressed-row form.
#[derive(Debug, Clone, Default)]
pub struct Csr<F> {
    /// `row_starts[i]..row_starts[i+1]` are row i's entries; length rows + 1.
    pub row_starts: Vec<u32>,
    /// Column (signal) of each entry.
    pub cols: Vec<u32>,
    /// Value of each entry.
    pub vals: Vec<F>,
}

impl<F: Field> Csr<F> {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    /// Row i as (columns, values).
    pub fn row(&self, i: usize) -> (&[u32], &[F]) {
        let r = self.row_starts[i] as usize..self.row_starts[i + 1] as usize;
        (&self.cols[r.clone()], &self.vals[r])
    }

    /// ⟨row i, w⟩.
    pub fn dot(&self, i: usize, w: &[F]) -> F {
        let (cols, vals) = self.row(i);
        cols.iter()
            .zip(vals)
            .fold(F::ZERO, |acc, (&c, v)| acc + *v * w[c as usize])
    }
}
