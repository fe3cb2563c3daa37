//! A proving key compiled once for proving: the zkey's coefficient list becomes one CSR
//! matrix per A and B (rows = constraints), its points become validated arkworks points,
//! and the evaluation domain is fixed. Immutable; share it behind an `Arc`.

use crate::blinding::BlindingBases;
pub use crate::csr::Csr;
use crate::curve::{bigint_from_le, Curve, MontLimbs};
use crate::error::{Error, PointError};
use crate::prepared_vk::PreparedVerifyingKey;
use crate::quotient::QuotientDomain;
use ark_ff::PrimeField;
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};
use zkpipe_formats::zkey::{Matrix, PointSection, ZkeyFile};

/// How much to check of the points of a key when it is loaded.
///
/// A key from elsewhere must be checked: a point outside the prime-order subgroup could
/// leak witness bits through its small-order component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PointChecks {
    /// Every point on the curve; subgroup membership by randomized batches (a bad point
    /// passes with probability ≤ 2⁻⁶⁴, see [`crate::subgroup`]); a failing batch is
    /// rechecked point by point to name the culprit. The default.
    #[default]
    Batched,
    /// Both checks on every point individually: exact, several times slower.
    PerPoint,
    /// Coordinates in range only: for keys you made or already validated.
    Trusted,
}

impl std::str::FromStr for PointChecks {
    type Err = String;

    /// `batched`, `per-point` or `trusted`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "batched" => Ok(PointChecks::Batched),
            "per-point" => Ok(PointChecks::PerPoint),
            "trusted" => Ok(PointChecks::Trusted),
            _ => Err(format!(
                "key checks {s:?} are not batched, per-point or trusted"
            )),
        }
    }
}

impl std::fmt::Display for PointChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PointChecks::Batched => "batched",
            PointChecks::PerPoint => "per-point",
            PointChecks::Trusted => "trusted",
        })
    }
}

/// The verifying key: what a verifier needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyingKey<E: Curve> {
    /// α·G1.
    pub alpha_g1: E::G1Affine,
    /// β·G2.
    pub beta_g2: E::G2Affine,
    /// γ·G2.
    pub gamma_g2: E::G2Affine,
    /// δ·G2.
    pub delta_g2: E::G2Affine,
    /// (β·Aᵢ(τ) + α·Bᵢ(τ) + Cᵢ(τ))/γ · G1 for the constant and each public signal.
    pub ic: Vec<E::G1Affine>,
}

impl<E: Curve> VerifyingKey<E> {
    /// Reads the verification key of a zkey: header points (checked in full; they are few)
    /// and the IC section, without touching the proving sections.
    pub fn from_zkey(zkey: &ZkeyFile, checks: PointChecks) -> Result<Self, Error> {
        let h = &zkey.header;
        if h.curve != E::ID {
            return Err(Error::CurveMismatch {
                what: "proving key",
                found: h.curve,
                expected: E::ID,
            });
        }
        let g1 =
            |what, b: &[u8]| header_point(zkey, what, E::g1_from_bytes(b, true), E::g1_in_subgroup);
        let g2 =
            |what, b: &[u8]| header_point(zkey, what, E::g2_from_bytes(b, true), E::g2_in_subgroup);
        Ok(Self {
            alpha_g1: g1("alpha_1", &h.alpha1)?,
            beta_g2: g2("beta_2", &h.beta2)?,
            gamma_g2: g2("gamma_2", &h.gamma2)?,
            delta_g2: g2("delta_2", &h.delta2)?,
            ic: load_points(
                zkey,
                PointSection::Ic,
                checks,
                E::ID.g1_bytes(),
                E::g1_from_bytes,
                E::g1_in_subgroup,
                E::g1_all_in_subgroup,
            )?,
        })
    }

    /// Number of public signals.
    pub fn n_public(&self) -> usize {
        self.ic.len() - 1
    }
}

/// The query points of the proving key.
#[derive(Debug, Clone)]
pub struct QueryPoints<E: Curve> {
    /// Aᵢ(τ)·G1 for every signal.
    pub a: Vec<E::G1Affine>,
    /// Bᵢ(τ)·G1 for every signal.
    pub b1: Vec<E::G1Affine>,
    /// Bᵢ(τ)·G2 for every signal.
    pub b2: Vec<E::G2Affine>,
    /// (β·Aᵢ(τ) + α·Bᵢ(τ) + Cᵢ(τ))/δ · G1 for private signals.
    pub c: Vec<E::G1Affine>,
    /// Lagrange points on the odd coset, scaled by Z(τ)/δ (snarkjs's H section).
    pub h: Vec<E::G1Affine>,
}

/// A proving key ready to prove with.
#[derive(Debug, Clone)]
pub struct CompiledKey<E: Curve> {
    /// Signals, including the constant 1.
    pub n_vars: usize,
    /// Public signals.
    pub n_public: usize,
    /// Verification key.
    pub vk: VerifyingKey<E>,
    /// β·G1.
    pub beta_g1: E::G1Affine,
    /// δ·G1.
    pub delta_g1: E::G1Affine,
    /// The A matrix, rows = domain size.
    pub a: Csr<E::ScalarField>,
    /// The B matrix, rows = domain size.
    pub b: Csr<E::ScalarField>,
    /// Query points.
    pub points: QueryPoints<E>,
    /// Domain and coset of the quotient step.
    pub domain: QuotientDomain<E::ScalarField>,
    /// Window tables of the blinding bases, once [`Self::prepare_resident`] made them.
    blinding: OnceLock<Arc<BlindingBases<E>>>,
    /// The verification key prepared for the self-check, likewise.
    prepared_vk: OnceLock<Arc<PreparedVerifyingKey<E>>>,
}

impl<E: Curve> CompiledKey<E> {
    /// Compiles a mapped zkey. Each section's pages are released once converted, so the
    /// key is never resident twice.
    pub fn compile(zkey: &ZkeyFile, checks: PointChecks) -> Result<Self, Error> {
        let h = &zkey.header;
        let n = h.domain_size as usize;
        let domain = QuotientDomain::new(n).ok_or_else(|| {
            Error::InvalidKey(format!("domain size {n} exceeds the field's 2-adicity"))
        })?;
        let vk = VerifyingKey::<E>::from_zkey(zkey, checks)?;
        let g1 =
            |what, b: &[u8]| header_point(zkey, what, E::g1_from_bytes(b, true), E::g1_in_subgroup);
        let beta_g1 = g1("beta_1", &h.beta1)?;
        let delta_g1 = g1("delta_1", &h.delta1)?;

        let (a, b) = compile_matrices::<E::ScalarField>(zkey, n)?;
        zkey.release_coefficients();

        let g1s = |s| {
            load_points(
                zkey,
                s,
                checks,
                E::ID.g1_bytes(),
                E::g1_from_bytes,
                E::g1_in_subgroup,
                E::g1_all_in_subgroup,
            )
        };
        let points = QueryPoints {
            a: g1s(PointSection::A)?,
            b1: g1s(PointSection::B1)?,
            b2: load_points(
                zkey,
                PointSection::B2,
                checks,
                E::ID.g2_bytes(),
                E::g2_from_bytes,
                E::g2_in_subgroup,
                E::g2_all_in_subgroup,
            )?,
            c: g1s(PointSection::C)?,
            h: g1s(PointSection::H)?,
        };
        Ok(Self {
            n_vars: h.n_vars as usize,
            n_public: h.n_public as usize,
            vk,
            beta_g1,
            delta_g1,
            a,
            b,
            points,
            domain,
            blinding: OnceLock::new(),
            prepared_vk: OnceLock::new(),
        })
    }

    /// Size of the evaluation domain (rows of A and B).
    pub fn domain_size(&self) -> usize {
        self.a.rows()
    }

    /// Marks the key resident: it will prove many times (the daemon, `bench`), so its
    /// one-time precomputation pays. Builds the window tables of its fixed blinding bases
    /// (δ₁, α₁, β₁, δ₂) now, with which every later proof's assembly costs tens of
    /// microseconds instead of a few variable-base multiplications ([`crate::assemble`]),
    /// and tells backends that bind it afterwards to precompute too (the CUDA backend's
    /// window tables). It also prepares the verification key for the self-check
    /// ([`PreparedVerifyingKey`]). A one-shot proof skips all of it: the builds cost more
    /// than one proof saves (a few ms here; ~0.5 s of GPU tables at 2^20). Idempotent.
    pub fn prepare_resident(&self) {
        self.blinding.get_or_init(|| {
            Arc::new(BlindingBases::new(
                self.delta_g1,
                self.vk.alpha_g1,
                self.beta_g1,
                self.vk.delta_g2,
            ))
        });
        self.prepared_vk.get_or_init(|| Arc::new(self.vk.prepare()));
    }

    /// Whether [`Self::prepare_resident`] was called.
    pub fn is_resident(&self) -> bool {
        self.blinding.get().is_some()
    }

    /// Prepares the verification key on the rayon pool, for a one-shot proof's self-check:
    /// built while the proof is, it saves the check its G2 preparation and e(α, β)
    /// (experiment 029). The check uses it only if it is ready (it never waits for it),
    /// and a key that has one keeps it.
    pub fn prepare_vk_in_background(self: &Arc<Self>) {
        if self.prepared_vk.get().is_some() {
            return;
        }
        let key = Arc::clone(self);
        // Made first and then set, never `get_or_init` on a pool thread: a worker blocked
        // there could sit on top of the very work it waits for.
        rayon::spawn(move || {
            let _ = key.prepared_vk.set(Arc::new(key.vk.prepare()));
        });
    }

    /// The verification key prepared for many checks, if [`Self::prepare_resident`] or
    /// [`Self::prepare_vk_in_background`] made it.
    pub fn prepared_vk(&self) -> Option<&PreparedVerifyingKey<E>> {
        self.prepared_vk.get().map(|p| p.as_ref())
    }

    /// The blinding tables, if [`Self::prepare_resident`] made them.
    pub(crate) fn blinding(&self) -> Option<&BlindingBases<E>> {
        self.blinding.get().map(|t| t.as_ref())
    }
}

fn header_point<P>(
    zkey: &ZkeyFile,
    what: &str,
    parsed: Result<P, PointError>,
    in_subgroup: impl Fn(&P) -> bool,
) -> Result<P, Error> {
    parsed
        .and_then(|p| {
            if in_subgroup(&p) {
                Ok(p)
            } else {
                Err(PointError::NotInSubgroup)
            }
        })
        .map_err(|problem| Error::InvalidPoint {
            what: format!("{}: header point {what}", zkey.path().display()),
            index: 0,
            problem,
        })
}

fn section_name(s: PointSection) -> &'static str {
    match s {
        PointSection::Ic => "section 3 (IC)",
        PointSection::A => "section 5 (A)",
        PointSection::B1 => "section 6 (B1)",
        PointSection::B2 => "section 7 (B2)",
        PointSection::C => "section 8 (C)",
        PointSection::H => "section 9 (H)",
    }
}

/// Converts one point section in parallel and checks it as `checks` says, then releases
/// its pages.
fn load_points<P: Send + Sync + Default>(
    zkey: &ZkeyFile,
    section: PointSection,
    checks: PointChecks,
    size: usize,
    parse: impl Fn(&[u8], bool) -> Result<P, PointError> + Sync,
    in_subgroup: impl Fn(&P) -> bool + Sync,
    all_in_subgroup: impl Fn(&[P], &mut dyn rand::RngCore) -> bool,
) -> Result<Vec<P>, Error> {
    let on_curve = checks != PointChecks::Trusted;
    let per_point = checks == PointChecks::PerPoint;
    let bad = |index, problem| Error::InvalidPoint {
        what: format!(
            "{}: {}, point",
            zkey.path().display(),
            section_name(section)
        ),
        index,
        problem,
    };
    // Collected in place (an indexed collect: every thread writes its own part), the
    // first bad point by index kept aside; collecting `Result`s would gather the parts in
    // lists and copy them together on one thread (experiment 027).
    let first_bad = std::sync::Mutex::new(None::<(usize, PointError)>);
    let mut points = Vec::new();
    zkey.points(section)
        .par_chunks_exact(size)
        .enumerate()
        .map(|(index, b)| {
            let checked = parse(b, on_curve).and_then(|p| {
                if per_point && !in_subgroup(&p) {
                    return Err(PointError::NotInSubgroup);
                }
                Ok(p)
            });
            checked.unwrap_or_else(|problem| {
                let mut first = first_bad.lock().unwrap_or_else(|e| e.into_inner());
                if first.as_ref().is_none_or(|(i, _)| index < *i) {
                    *first = Some((index, problem));
                }
                P::default()
            })
        })
        .collect_into_vec(&mut points);
    zkey.release(section);
    if let Some((index, problem)) = first_bad.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(bad(index, problem));
    }
    if checks == PointChecks::Batched {
        let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::from_entropy();
        if !all_in_subgroup(&points, &mut rng) {
            let index = points
                .par_iter()
                .position_first(|p| !in_subgroup(p))
                .unwrap_or(0);
            return Err(bad(index, PointError::NotInSubgroup));
        }
    }
    Ok(points)
}

/// Section 4 → CSR of A and B. Values are stored as v·R², so v = stored · R⁻².
///
/// Keys whose entries come row by row in each matrix (snarkjs writes them so, and so does
/// `setup --dev`) are compiled on every thread: a first pass checks and counts the entries
/// of each block, a second converts them into their places. Any other order is compiled
/// on one thread. (A 2^20 key's ~8M entries took ~1.1 s on one thread, half of a one-shot
/// CPU proof's key load; experiment 027.)
fn compile_matrices<F: MontLimbs>(zkey: &ZkeyFile, rows: usize) -> Result<(Csr<F>, Csr<F>), Error> {
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
/// then multiplying by R⁻² took two (experiment 029).
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

/// R = 2^(64·limbs) mod r, the Montgomery radix snarkjs and arkworks share.
pub fn montgomery_r<F: PrimeField>() -> F {
    let limbs = F::MODULUS.as_ref().len() as u64;
    F::from(2u64).pow([64 * limbs])
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
