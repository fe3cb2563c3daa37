//! Section 4 of a zkey (the coefficient list) compiled into one CSR matrix per A and B.
//! Values are stored as v·R², so v = stored · R⁻².

use super::montgomery_r;
use crate::csr::Csr;
use crate::curve::{bigint_from_le, MontLimbs};
use crate::error::Error;
use ark_ff::PrimeField;
use rayon::prelude::*;
use zkpipe_formats::zkey::{Matrix, ZkeyFile};

/// Section 4 → CSR of A and B. Values are stored as v·R², so v = stored · R⁻².
///
/// Keys whose entries come row by row in each matrix (snarkjs writes them so, and so does
/// `setup --dev`) are compiled on every thread: a first pass checks and counts the entries
/// of each block, a second converts them into their places. Any other order is compiled
/// on one thread. (A 2^20 key's ~8M entries take ~1.1 s on one thread, half of a one-shot
/// CPU proof's key load; lab/experiments/027-cpu-vs-rapidsnark.md.)
pub(super) fn compile_matrices<F: MontLimbs>(
    zkey: &ZkeyFile,
    rows: usize,
) -> Result<(Csr<F>, Csr<F>), Error> {
    compile_matrices_in_blocks(zkey, rows, COEFFICIENT_BLOCK)
}

/// [`compile_matrices`] with `block` entries per block.
fn compile_matrices_in_blocks<F: MontLimbs>(
    zkey: &ZkeyFile,
    rows: usize,
    block: usize,
) -> Result<(Csr<F>, Csr<F>), Error> {
    let stored = StoredValues::<F>::new()?;
    let n = zkey.n_coefficients() as usize;
    let block_range = |b: usize| b * block..((b + 1) * block).min(n);
    let scans: Vec<BlockScan> = (0..n.div_ceil(block))
        .into_par_iter()
        .map(|b| BlockScan::of(zkey, block_range(b)))
        .collect::<Result<_, _>>()?;
    if !rows_ascend(&scans) {
        return compile_matrices_in_file_order(zkey, rows, stored);
    }
    let [a, b] = [0, 1].map(|m| {
        let nnz: usize = scans.iter().map(|s| s.count[m]).sum();
        Csr {
            row_starts: vec![0u32; rows + 1],
            cols: vec![0u32; nnz],
            vals: zeros(nnz),
        }
    });
    let mut mats = [a, b];
    // Each block's share of both matrices: its entries' places, and the row starts of the
    // rows its entries open (rows past the previous block's last row, up to its own last).
    let mut shares: Vec<[MatrixShare<'_, F>; 2]> = Vec::with_capacity(scans.len());
    {
        let [ma, mb] = &mut mats;
        let mut rest = [ma, mb].map(|m| {
            (
                m.row_starts.as_mut_slice(),
                m.cols.as_mut_slice(),
                m.vals.as_mut_slice(),
            )
        });
        let mut placed = [0usize; 2];
        let mut opened = [0usize; 2]; // rows whose start is already assigned
        for scan in &scans {
            shares.push(std::array::from_fn(|m| {
                let (starts, cols, vals) = std::mem::take(&mut rest[m]);
                let count = scan.count[m];
                let new_rows = if count == 0 {
                    0
                } else {
                    scan.last[m] as usize + 1 - opened[m]
                };
                let (my_starts, starts) = starts.split_at_mut(new_rows);
                let (my_cols, cols) = cols.split_at_mut(count);
                let (my_vals, vals) = vals.split_at_mut(count);
                rest[m] = (starts, cols, vals);
                let share = MatrixShare {
                    first_place: placed[m],
                    first_row: opened[m],
                    starts: my_starts,
                    cols: my_cols,
                    vals: my_vals,
                    filled: 0,
                    opened: 0,
                };
                placed[m] += count;
                opened[m] += new_rows;
                share
            }));
        }
        // Rows after the last entry (and the end marker) start at nnz.
        for (m, (starts, _, _)) in rest.iter_mut().enumerate() {
            starts.fill(placed[m] as u32);
        }
    }
    shares
        .into_par_iter()
        .enumerate()
        .try_for_each(|(b, mut share)| {
            for i in block_range(b) {
                let coef = zkey.coefficient(i)?;
                let value = stored.value(zkey, i, coef.value)?;
                share[matrix_index(coef.matrix)].place(
                    coef.constraint as usize,
                    coef.signal,
                    value,
                );
            }
            Ok::<_, Error>(())
        })?;
    let [a, b] = mats;
    Ok((a, b))
}

/// Entries per block of [`compile_matrices`]'s passes.
const COEFFICIENT_BLOCK: usize = 1 << 12;

/// `n` zeros, written by every thread (a 2^20 key's values are ~150 MiB).
fn zeros<F: PrimeField>(n: usize) -> Vec<F> {
    let mut v = Vec::with_capacity(n);
    (0..n)
        .into_par_iter()
        .map(|_| F::ZERO)
        .collect_into_vec(&mut v);
    v
}

/// One block of section 4, per matrix: how many entries, its first and last row, and
/// whether its rows never go down.
struct BlockScan {
    count: [usize; 2],
    first: [u32; 2],
    last: [u32; 2],
    ascending: [bool; 2],
}

impl BlockScan {
    fn of(zkey: &ZkeyFile, range: std::ops::Range<usize>) -> Result<Self, Error> {
        let mut s = BlockScan {
            count: [0; 2],
            first: [0; 2],
            last: [0; 2],
            ascending: [true; 2],
        };
        for i in range {
            let coef = zkey.coefficient(i)?;
            let (m, row) = (matrix_index(coef.matrix), coef.constraint);
            if s.count[m] == 0 {
                s.first[m] = row;
            } else if row < s.last[m] {
                s.ascending[m] = false;
            }
            s.last[m] = row;
            s.count[m] += 1;
        }
        Ok(s)
    }
}

/// Whether each matrix's rows never go down over the whole section.
fn rows_ascend(scans: &[BlockScan]) -> bool {
    (0..2).all(|m| {
        let mut last = 0u32;
        scans.iter().filter(|s| s.count[m] > 0).all(|s| {
            let ok = s.ascending[m] && s.first[m] >= last;
            last = s.last[m];
            ok
        })
    })
}

/// One block's places in one matrix (entries in row order, so a block's places are
/// consecutive, and so are the rows it opens).
struct MatrixShare<'a, F> {
    /// Place of the block's first entry in the matrix.
    first_place: usize,
    /// First row whose start this block may assign (the rows before are opened already).
    first_row: usize,
    starts: &'a mut [u32],
    cols: &'a mut [u32],
    vals: &'a mut [F],
    filled: usize,
    opened: usize,
}

impl<F> MatrixShare<'_, F> {
    /// Puts the block's next entry in this matrix in place, first opening every row up to
    /// its own (rows without entries start where the next row does).
    fn place(&mut self, row: usize, col: u32, value: F) {
        let place = (self.first_place + self.filled) as u32;
        let open_to = (row + 1).saturating_sub(self.first_row);
        if open_to > self.opened {
            self.starts[self.opened..open_to].fill(place);
            self.opened = open_to;
        }
        self.cols[self.filled] = col;
        self.vals[self.filled] = value;
        self.filled += 1;
    }
}

/// [`compile_matrices`] on one thread, for entries in any order.
fn compile_matrices_in_file_order<F: MontLimbs>(
    zkey: &ZkeyFile,
    rows: usize,
    stored: StoredValues<F>,
) -> Result<(Csr<F>, Csr<F>), Error> {
    let mut counts = [vec![0u32; rows + 1], vec![0u32; rows + 1]];
    for coef in zkey.coefficients() {
        let coef = coef?;
        counts[matrix_index(coef.matrix)][coef.constraint as usize + 1] += 1;
    }
    let mut mats: Vec<Csr<F>> = counts
        .into_iter()
        .map(|mut starts| {
            for i in 1..starts.len() {
                starts[i] += starts[i - 1];
            }
            let nnz = starts[rows] as usize;
            Csr {
                row_starts: starts,
                cols: vec![0; nnz],
                vals: vec![F::ZERO; nnz],
            }
        })
        .collect();
    let mut fill: Vec<Vec<u32>> = mats.iter().map(|m| m.row_starts[..rows].to_vec()).collect();
    for (index, coef) in zkey.coefficients().enumerate() {
        let coef = coef?;
        let m = matrix_index(coef.matrix);
        let value = stored.value(zkey, index, coef.value)?;
        let slot = &mut fill[m][coef.constraint as usize];
        mats[m].cols[*slot as usize] = coef.signal;
        mats[m].vals[*slot as usize] = value;
        *slot += 1;
    }
    let b = mats.pop().unwrap_or_default();
    let a = mats.pop().unwrap_or_default();
    Ok((a, b))
}

fn matrix_index(m: Matrix) -> usize {
    match m {
        Matrix::A => 0,
        Matrix::B => 1,
    }
}

/// Section 4's stored values, v·R² as little-endian integers, made into the field
/// elements v. Read as Montgomery limbs (arkworks keeps x as x·R) a stored value is v·R
/// already, so one multiplication by R⁻¹ gives v, where converting it as an integer and
/// then multiplying by R⁻² takes two.
#[derive(Clone, Copy)]
struct StoredValues<F> {
    r_inv: F,
}

impl<F: MontLimbs> StoredValues<F> {
    fn new() -> Result<Self, Error> {
        let r_inv = montgomery_r::<F>()
            .inverse()
            .ok_or_else(|| Error::InvalidKey("R is not invertible".into()))?;
        Ok(Self { r_inv })
    }

    /// Coefficient `index`'s value v from its stored bytes.
    fn value(&self, zkey: &ZkeyFile, index: usize, bytes: &[u8]) -> Result<F, Error> {
        let big = bigint_from_le::<F>(bytes)
            .filter(|big| *big < F::MODULUS)
            .ok_or_else(|| Error::InvalidScalar {
                what: format!("{}: coefficient {index}", zkey.path().display()),
                value: zkpipe_formats::curve::le_to_decimal(bytes),
            })?;
        let mut limbs = [0u64; 4];
        limbs.copy_from_slice(big.as_ref());
        Ok(F::from_mont_limbs(limbs) * self.r_inv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_formats::mapped::MappedFile;

    fn fixture_key(curve: &str) -> ZkeyFile {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(curve)
            .join("poseidon/circuit.zkey");
        ZkeyFile::open(path).unwrap()
    }

    fn assert_same<F: PrimeField>(got: &(Csr<F>, Csr<F>), want: &(Csr<F>, Csr<F>), what: &str) {
        for (g, w) in [(&got.0, &want.0), (&got.1, &want.1)] {
            assert_eq!(g.row_starts, w.row_starts, "{what}: row starts");
            assert_eq!(g.cols, w.cols, "{what}: columns");
            assert_eq!(g.vals, w.vals, "{what}: values");
        }
    }

    /// The blocked build gives exactly the one-thread build's matrices, however the
    /// entries fall into blocks (rows split across blocks, blocks without one matrix).
    #[test]
    fn blocks_compile_the_same_matrices() {
        type F = ark_bn254::Fr;
        let z = fixture_key("bn254");
        let rows = z.header.domain_size as usize;
        let want =
            compile_matrices_in_file_order::<F>(&z, rows, StoredValues::new().unwrap()).unwrap();
        assert!(want.0.cols.len() + want.1.cols.len() == z.n_coefficients() as usize);
        for block in [1, 2, 3, 7, 64, 1000, COEFFICIENT_BLOCK] {
            let got = compile_matrices_in_blocks::<F>(&z, rows, block).unwrap();
            assert_same(&got, &want, &format!("block {block}"));
        }
    }

    /// Entries out of row order take the one-thread build, which sorts them by row.
    #[test]
    fn entries_in_any_order_compile() {
        type F = ark_bls12_381::Fr;
        let z = fixture_key("bls12-381");
        let rows = z.header.domain_size as usize;
        let want = compile_matrices::<F>(&z, rows).unwrap();
        // The same entries, last first.
        let mut bytes = z.bytes().to_vec();
        let entry = 12 + z.header.curve.n8r();
        let n = z.n_coefficients() as usize;
        let first =
            z.coefficient(0).unwrap().value.as_ptr() as usize - z.bytes().as_ptr() as usize - 12;
        let entries: Vec<Vec<u8>> = bytes[first..first + n * entry]
            .chunks(entry)
            .map(<[u8]>::to_vec)
            .collect();
        for (k, e) in entries.iter().rev().enumerate() {
            bytes[first + k * entry..first + (k + 1) * entry].copy_from_slice(e);
        }
        let reversed = ZkeyFile::from_file(MappedFile::from_bytes("reversed.zkey", bytes)).unwrap();
        let got = compile_matrices_in_blocks::<F>(&reversed, rows, 64).unwrap();
        for (g, w) in [(&got.0, &want.0), (&got.1, &want.1)] {
            assert_eq!(g.row_starts, w.row_starts);
            for r in 0..rows {
                let (gc, gv) = g.row(r);
                let (wc, wv) = w.row(r);
                let mut g: Vec<_> = gc.iter().zip(gv).rev().collect();
                let w: Vec<_> = wc.iter().zip(wv).collect();
                g.sort_by_key(|(c, _)| **c);
                let mut w = w;
                w.sort_by_key(|(c, _)| **c);
                assert_eq!(g, w, "row {r}");
            }
        }
    }
}
