//! A proving key compiled once for proving: the zkey's coefficient list becomes one CSR
//! matrix per A and B (rows = constraints), its points become validated arkworks points,
//! and the evaluation domain is fixed. Immutable; share it behind an `Arc`.

use crate::blinding::BlindingBases;
pub use crate::csr::Csr;
use crate::curve::Curve;
use crate::error::{Error, PointError};
use crate::prepared_vk::PreparedVerifyingKey;
use crate::quotient::QuotientDomain;
use ark_ff::PrimeField;
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};
use zkpipe_formats::zkey::{PointSection, ZkeyFile};
use zkpipe_formats::CurveId;

mod matrices;
use matrices::compile_matrices;

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

impl<E: Curve> QueryPoints<E> {
    /// Bytes of the five sets as arkworks holds them (`[B]₂`'s only where `g2`).
    pub fn host_bytes(&self, g2: bool) -> u64 {
        let g1 = std::mem::size_of::<E::G1Affine>();
        let n1 = self.a.len() + self.b1.len() + self.c.len() + self.h.len();
        let b2 = if g2 {
            self.b2.len() * std::mem::size_of::<E::G2Affine>()
        } else {
            0
        };
        (n1 * g1 + b2) as u64
    }
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
    /// built while the proof is, it saves the check its G2 preparation and e(α, β).
    /// The check uses it only if it is ready (it never waits for it), and a key that has
    /// one keeps it.
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
    // lists and copy them together on one thread.
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

/// R = 2^(64·limbs) mod r, the Montgomery radix snarkjs and arkworks share.
pub fn montgomery_r<F: PrimeField>() -> F {
    let limbs = F::MODULUS.as_ref().len() as u64;
    F::from(2u64).pow([64 * limbs])
}

/// The shape of a key as its zkey header gives it: enough to size memory and decide
/// capabilities before the key is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyShape {
    /// Its curve.
    pub curve: CurveId,
    /// Signals including the constant 1 (witness length).
    pub n_vars: usize,
    /// Public signals.
    pub n_public: usize,
    /// Evaluation domain size.
    pub domain_size: usize,
    /// Entries of the A and B matrices together.
    pub n_coefficients: usize,
}

impl KeyShape {
    /// From a mapped zkey's header.
    pub fn of_zkey(z: &ZkeyFile) -> Self {
        let h = &z.header;
        Self {
            curve: h.curve,
            n_vars: h.n_vars as usize,
            n_public: h.n_public as usize,
            domain_size: h.domain_size as usize,
            n_coefficients: z.n_coefficients() as usize,
        }
    }

    /// From a compiled key.
    pub fn of_key<E: Curve>(k: &CompiledKey<E>) -> Self {
        Self {
            curve: E::ID,
            n_vars: k.n_vars,
            n_public: k.n_public,
            domain_size: k.domain_size(),
            n_coefficients: k.a.cols.len() + k.b.cols.len(),
        }
    }
}
