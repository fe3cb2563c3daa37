//! Masks for constant-work MSMs ([`crate::device::BindOptions::constant_work`]): a key bound with
//! constant work draws random vectors m (one value per signal) and m′ (one per domain
//! row) and computes their sums over the key's point sets once. Every proof's MSMs then
//! read w + m and h + m′, which look uniformly random whatever the witness is, and the
//! mask's sums come off the results ([`DeviceSums::take_off`]): Σ (wᵢ + mᵢ)·Pᵢ − Σ mᵢ·Pᵢ
//! is the sum asked for. The CPU's mask is [`CpuMask`]; a GPU keeps its own on the device.

use crate::curve::Curve;
use crate::device::PassWitness;
use crate::error::Error;
use crate::key::CompiledKey;
use crate::msm::pippenger::BatchAffineMsm;
use crate::msm::{DeviceSums, MsmOptions, ScalarInt};
use ark_ff::PrimeField;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

/// `n` field elements drawn uniformly from a ChaCha20 stream seeded by the OS's entropy,
/// in parallel (one stream per chunk of the one seed).
pub fn draw_values<F: PrimeField>(n: usize) -> Vec<F> {
    const CHUNK: usize = 1 << 14;
    let seed = ChaCha20Rng::from_entropy().get_seed();
    let mut out = vec![F::ZERO; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = ChaCha20Rng::from_seed(seed);
            rng.set_stream(i as u64);
            for x in chunk {
                *x = F::rand(&mut rng);
            }
        });
    out
}

impl<E: Curve> DeviceSums<E> {
    /// Takes a mask's sums off these: the sums of the unmasked scalars.
    pub fn take_off(&mut self, mask: &DeviceSums<E>) {
        self.a -= mask.a;
        self.b1 -= mask.b1;
        self.c -= mask.c;
        self.h -= mask.h;
        if let (Some(b2), Some(m)) = (self.b2.as_mut(), mask.b2) {
            *b2 -= m;
        }
    }
}

/// A key's mask on the CPU: m and m′ in memory (never written anywhere) and their sums,
/// [B]₂ included (a masked CPU pass makes [B]₂ itself, so the tail never sees w).
pub struct CpuMask<E: Curve> {
    w: Vec<E::ScalarField>,
    h: Vec<E::ScalarField>,
    sums: DeviceSums<E>,
}

impl<E: Curve> CpuMask<E> {
    /// Draws a mask for `key` and computes its five sums on the CPU (MSMs as `opts`
    /// says): one proof's MSMs.
    pub fn draw(key: &CompiledKey<E>, opts: MsmOptions) -> Self {
        let w: Vec<E::ScalarField> = draw_values(key.n_vars);
        let h: Vec<E::ScalarField> = draw_values(key.domain_size());
        let (mut sw, mut sh) = (Vec::new(), Vec::new());
        crate::msm::scalars_into(&w, &mut sw);
        crate::msm::scalars_into(&h, &mut sh);
        let p = &key.points;
        let private = &sw[key.n_public + 1..];
        let g1 = |bases: &[E::G1Affine], s: &[ScalarInt<E>]| {
            E::G1Affine::msm_batch_affine(bases, s, opts)
        };
        let ((a, b1), ((c, h_sum), b2)) = rayon::join(
            || rayon::join(|| g1(&p.a, &sw), || g1(&p.b1, &sw)),
            || {
                rayon::join(
                    || rayon::join(|| g1(&p.c, private), || g1(&p.h, &sh)),
                    || E::G2Affine::msm_batch_affine(&p.b2, &sw, opts),
                )
            },
        );
        Self {
            w,
            h,
            sums: DeviceSums {
                a,
                b1,
                b2: Some(b2),
                c,
                h: h_sum,
            },
        }
    }

    /// The witness masked: (wᵢ + mᵢ) as MSM scalars. A scalar ≥ r (not from a field
    /// element) is refused.
    pub fn mask_w(&self, w: PassWitness<'_, E>) -> Result<Vec<ScalarInt<E>>, Error> {
        let add = |(x, m): (E::ScalarField, &E::ScalarField)| (x + m).into_bigint();
        match w {
            PassWitness::Montgomery(f) => Ok(f.par_iter().copied().zip(&self.w).map(add).collect()),
            PassWitness::Scalars(s) => s
                .par_iter()
                .enumerate()
                .zip(&self.w)
                .map(|((i, s), m)| match E::ScalarField::from_bigint(*s) {
                    Some(x) => Ok(add((x, m))),
                    None => Err(Error::InvalidScalar {
                        what: format!("witness value {i}"),
                        value: s.to_string(),
                    }),
                })
                .collect(),
        }
    }

    /// h masked, as MSM scalars into `out` (cleared first).
    pub fn mask_h_into(&self, h: &[E::ScalarField], out: &mut Vec<ScalarInt<E>>) {
        h.par_iter()
            .zip(&self.h)
            .map(|(x, m)| (*x + m).into_bigint())
            .collect_into_vec(out);
    }

    /// The mask's sums.
    pub fn sums(&self) -> &DeviceSums<E> {
        &self.sums
    }
}
