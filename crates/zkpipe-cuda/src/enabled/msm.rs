//! MSMs against points resident on a GPU: [`Resident`] point sets (G1 or G2, uploaded
//! once), sppark's MSM of one scalar vector against a set (scalars in host or device
//! memory), the batched MSM of several vectors ([`BatchPlan`], `cuda/batch_msm.cuh`), and
//! sppark's one-shot MSM ([`msm_oneshot`], the reference the resident path is checked
//! against).

use crate::enabled::curve::{GpuCurve, GpuGroup, G1, G2};
use crate::enabled::ffi;
use crate::enabled::runtime::{check, check_device};
use crate::CudaError;
use ark_ec::AdditiveGroup;
use ark_ff::PrimeField;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Mutex;

/// Points uploaded to the GPU once, for many MSMs. One sppark MSM at a time runs per set
/// (an internal lock), since sppark's `msm_t` owns one set of buckets; batched MSMs
/// ([`Self::batch_msm`]) bring their own scratch and run alongside.
pub struct Resident<E: GpuCurve, G: GpuGroup<E>> {
    handle: ffi::SetHandle,
    /// Held around sppark's MSMs, which use the set's one bucket array; batched MSMs
    /// bring their own scratch and do not take it.
    sppark: Mutex<()>,
    len: usize,
    pad: usize,
    /// Window width of the set's table (0: none), see [`Self::upload_tabled`].
    table_wbits: u32,
    /// A chunk set's room ([`Self::chunk`]), 0 for points uploaded once.
    cap: usize,
    device: i32,
    _curve: PhantomData<(E, G)>,
}

/// Resident G1 points.
pub type ResidentG1<E> = Resident<E, G1>;
/// Resident G2 points.
pub type ResidentG2<E> = Resident<E, G2>;

// SAFETY: sppark's MSM state is only used under `sppark`; batched MSMs only read the
// resident points; the device memory is not tied to a host thread.
unsafe impl<E: GpuCurve, G: GpuGroup<E>> Send for Resident<E, G> {}
unsafe impl<E: GpuCurve, G: GpuGroup<E>> Sync for Resident<E, G> {}

impl<E: GpuCurve, G: GpuGroup<E>> Resident<E, G> {
    /// Uploads `points` (arkworks affine points, read with their stride) to GPU `device`.
    pub fn upload(points: &[G::Affine], device: usize) -> Result<Self, CudaError> {
        Self::upload_padded(points, 0, device)
    }

    /// As [`Self::upload`], after `pad` points at infinity, so that the set lines up
    /// with a scalar vector of which `points` multiply the suffix (the C query and w).
    /// Single MSMs ([`Self::msm`] and the like) see only `points`.
    pub fn upload_padded(
        points: &[G::Affine],
        pad: usize,
        device: usize,
    ) -> Result<Self, CudaError> {
        Self::upload_with(points, pad, 0, device)
    }

    /// As [`Self::upload_padded`], plus, with `tabled`, the set's window table, built on
    /// the GPU: for every window w of the width [`crate::shape::table_wbits`] picks, the
    /// points times 2^(w·width) (fixed-base precomputation). Batch plans made for that
    /// width ([`BatchPlan::new`] with [`Self::table_wbits`]) then sum all windows of a
    /// proof in one group of buckets. Costs ⌈scalar bits / width⌉ times the points'
    /// memory ([`Self::device_bytes`]).
    pub fn upload_tabled(
        points: &[G::Affine],
        pad: usize,
        tabled: bool,
        device: usize,
    ) -> Result<Self, CudaError> {
        let wbits = match tabled {
            true => crate::shape::table_wbits(pad + points.len(), scalar_bits::<E>()),
            false => 0,
        };
        Self::upload_with(points, pad, wbits, device)
    }

    fn upload_with(
        points: &[G::Affine],
        pad: usize,
        table_wbits: u32,
        device: usize,
    ) -> Result<Self, CudaError> {
        check_device(device)?;
        let dev = device as i32;
        let mut handle: ffi::SetHandle = std::ptr::null_mut();
        // SAFETY: `points` is a live slice of `len` elements of `size_of` bytes each, whose
        // leading words are x, y in Montgomery form (arkworks' affine layout, infinity as
        // (0, 0)); the shim copies them to the device before returning.
        check(unsafe {
            (G::fns().new)(
                &mut handle,
                points.as_ptr() as *const c_void,
                points.len(),
                std::mem::size_of::<G::Affine>(),
                pad,
                table_wbits,
                dev,
            )
        })?;
        Ok(Self {
            handle,
            sppark: Mutex::new(()),
            len: points.len(),
            pad,
            table_wbits,
            cap: 0,
            device: dev,
            _curve: PhantomData,
        })
    }

    /// An empty chunk set on GPU `device`: room for `cap` points at the device address
    /// `room` (borrowed memory: a proof's idle quotient vectors, or a walk's buffer,
    /// `crate::enabled::streamed`), which a walk refills chunk after chunk while a key too
    /// large for the device streams through it ([`Self::filled`]), and sppark's MSM state
    /// sized for them. No table, no padding; batched MSMs do not run on it.
    ///
    /// # Safety
    /// `room` must be device memory on `device` of at least `cap` device points
    /// ([`Self::device_point_bytes`] each) that nothing else reads or writes while the
    /// set's MSMs run, and that outlives the set.
    pub unsafe fn chunk(cap: usize, device: usize, room: usize) -> Result<Self, CudaError> {
        check_device(device)?;
        let dev = device as i32;
        let mut handle: ffi::SetHandle = std::ptr::null_mut();
        let room = room as *mut c_void;
        // SAFETY: the shim takes the caller's room (valid as the contract says) and
        // allocates sppark's state; `handle` receives the set.
        check(unsafe {
            (G::fns().chunk_new)(
                &mut handle,
                cap,
                std::mem::size_of::<G::Affine>(),
                room,
                dev,
            )
        })?;
        Ok(Self {
            handle,
            sppark: Mutex::new(()),
            len: 0,
            pad: 0,
            table_wbits: 0,
            cap,
            device: dev,
            _curve: PhantomData,
        })
    }

    /// Packs `points` into `dst` in the device's layout: each point's x and y,
    /// [`Self::device_point_bytes`] apart (in parallel). `dst` holds exactly that many.
    pub fn pack(points: &[G::Affine], dst: &mut [u8]) {
        use rayon::prelude::*;
        const PER_TASK: usize = 1 << 12;
        let point = Self::device_point_bytes();
        assert_eq!(
            dst.len(),
            points.len() * point,
            "packing into the wrong size"
        );
        dst.par_chunks_mut(point * PER_TASK)
            .zip(points.par_chunks(PER_TASK))
            .for_each(|(dst, src)| {
                for (d, p) in dst.chunks_exact_mut(point).zip(src) {
                    // SAFETY: an arkworks affine point starts with its x and y in
                    // Montgomery form, `point` bytes (as the shims read it too).
                    let xy = unsafe {
                        std::slice::from_raw_parts(p as *const G::Affine as *const u8, point)
                    };
                    d.copy_from_slice(xy);
                }
            });
    }

    /// Marks a chunk set as holding the `n` points a walk copied into its room
    /// ([`crate::enabled::memory::upload_to`]): its MSMs then run over them.
    ///
    /// # Safety
    /// The set's room must hold `n` points in the device's layout, copied there after the
    /// set's last MSM returned.
    pub unsafe fn filled(&mut self, n: usize) -> Result<(), CudaError> {
        if n > self.cap {
            return Err(CudaError::Length(format!(
                "a chunk of {n} points in a chunk set of room {}",
                self.cap
            )));
        }
        self.len = n;
        Ok(())
    }

    /// Bytes of one point as the device holds it: x and y.
    pub fn device_point_bytes() -> usize {
        2 * G::coord_words() * 8
    }

    /// Number of resident points (without padding).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no points are resident.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The window width of the set's table, 0 without one: what [`BatchPlan::new`] takes
    /// to run against it.
    pub fn table_wbits(&self) -> u32 {
        self.table_wbits
    }

    /// Device memory of the points and their table (sppark's MSM state not counted).
    pub fn device_bytes(&self) -> usize {
        let rows = crate::shape::table_rows(self.table_wbits, scalar_bits::<E>());
        (self.pad + self.len) * rows * 2 * G::coord_words() * 8
    }

    /// Σ scalarsᵢ·pointsᵢ over the first `n` points. `scalars` are 4-word little-endian
    /// integers in standard form (or Montgomery form with `mont`), in host memory (pinned
    /// for full transfer speed).
    pub fn msm_raw(
        &self,
        scalars: *const [u64; 4],
        n: usize,
        mont: bool,
    ) -> Result<G::Point, CudaError> {
        self.msm_at(scalars, n, mont, false)
    }

    /// As [`Self::msm_raw`], with the `n` scalars already in this GPU's memory.
    ///
    /// # Safety
    /// `scalars` must be a device address on this set's GPU, valid for `n` scalars, and
    /// not written while the call runs.
    pub unsafe fn msm_device(
        &self,
        scalars: *const [u64; 4],
        n: usize,
        mont: bool,
    ) -> Result<G::Point, CudaError> {
        self.msm_at(scalars, n, mont, true)
    }

    fn msm_at(
        &self,
        scalars: *const [u64; 4],
        n: usize,
        mont: bool,
        on_device: bool,
    ) -> Result<G::Point, CudaError> {
        if n > self.len {
            return Err(CudaError::Length(format!(
                "{n} scalars for {} resident points",
                self.len
            )));
        }
        let mut out = vec![0u64; 3 * G::coord_words()];
        let _sppark = self.sppark.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `out` has room for one Jacobian point; `scalars` addresses `n` 4-word
        // integers in host or (on_device) this GPU's memory (the callers' contracts); the
        // handle is live and sppark's state is used under the lock.
        check(unsafe {
            (G::fns().msm)(
                self.handle,
                out.as_mut_ptr() as *mut c_void,
                scalars as *const c_void,
                n,
                mont,
                on_device,
            )
        })?;
        Ok(G::from_jacobian(&out))
    }

    /// The k MSMs of `plan` against these points (padding included, so the plan's
    /// length must be pad + len), in the plan's order.
    pub fn batch_msm(&self, plan: &BatchPlan<E>) -> Result<Vec<G::Point>, CudaError> {
        if plan.n != self.pad + self.len || plan.device != self.device {
            return Err(CudaError::Length(format!(
                "a batch plan of {} scalars on GPU {} for {} points on GPU {}",
                plan.n,
                plan.device,
                self.pad + self.len,
                self.device
            )));
        }
        if plan.table_wbits != 0 && plan.table_wbits != self.table_wbits {
            return Err(CudaError::Length(format!(
                "a batch plan for a window table of {} bits on a set with {}",
                plan.table_wbits, self.table_wbits
            )));
        }
        let words = 4 * G::coord_words();
        let per_proof = plan.groups * plan.wbits;
        let mut out = vec![0u64; plan.k * per_proof * words];
        // SAFETY: `out` has room for the plan's k·groups·wbits xyzz bit sums; the plan and
        // the set are live and on the same GPU (checked), the plan's table is the set's
        // (checked again there); the call only reads the resident points.
        check(unsafe {
            (G::fns().batch)(self.handle, plan.handle, out.as_mut_ptr() as *mut c_void)
        })?;
        // Proof j's MSM is Σ_{g,b} 2^(g·wbits + b)·T[j][g][b]: Horner from the top bit
        // (with a table, one group: wbits steps). On the host, because this chain of up
        // to ~255 doublings is one thread's serial work either way, and a CPU core does
        // each step several times faster than a GPU thread; a batch's proofs on the pool's
        // cores.
        use rayon::prelude::*;
        Ok(out
            .par_chunks(per_proof * words)
            .map(|sums| {
                let mut acc = G::Point::ZERO;
                for t in sums.chunks(words).rev() {
                    acc.double_in_place();
                    acc += G::from_xyzz(t);
                }
                acc
            })
            .collect())
    }

    /// Σ of the points `first..first + n` (past the padding; a chunk set's as the walk
    /// filled it) whose bit `bit0 + (i − first)` of the device bitmap at `ones` is set:
    /// the bit path's GPU share of a w MSM (the split and the host's share are
    /// `crate::enabled::bits`'s).
    ///
    /// # Safety
    /// `ones` must be a bitmap on this set's GPU with bits up to `bit0 + n` and two
    /// words past them, not written while this runs; a chunk set must hold its points
    /// ([`Self::filled`]).
    pub unsafe fn bits_sum(
        &self,
        ones: usize,
        first: usize,
        n: usize,
        bit0: usize,
    ) -> Result<G::Point, CudaError> {
        if first + n > self.len {
            return Err(CudaError::Length(format!(
                "a bit sum of points {first}..{} of {}",
                first + n,
                self.len
            )));
        }
        let words = 4 * G::coord_words();
        let mut out = vec![0u64; BITS_SUMS_OUT * words];
        // SAFETY: `out` has room for the partial xyzz sums; the set is live, `ones` as the
        // caller says; the call only reads the points.
        check(unsafe {
            (G::fns().bits_sum)(
                self.handle,
                first,
                n,
                ones as *const u32,
                bit0,
                out.as_mut_ptr() as *mut c_void,
            )
        })?;
        let mut sum = G::Point::ZERO;
        for t in out.chunks(words) {
            sum += G::from_xyzz(t);
        }
        Ok(sum)
    }

    /// Σ scalarsᵢ·pointsᵢ (standard-form scalars, at most as many as points). A scalar
    /// ≥ r is refused ([`CudaError::ScalarOutOfRange`]).
    pub fn msm(
        &self,
        scalars: &[<E::ScalarField as PrimeField>::BigInt],
    ) -> Result<G::Point, CudaError> {
        check_scalars::<E>(scalars)?;
        self.msm_raw(scalars.as_ptr() as *const [u64; 4], scalars.len(), false)
    }
}

/// Partial sums one bit sum hands back (`ZKP_BITS_OUT` in `cuda/bits.cuh`).
const BITS_SUMS_OUT: usize = 32;

/// Bits of the curve's scalar field: what the window count is reckoned from.
fn scalar_bits<E: GpuCurve>() -> u32 {
    E::ScalarField::MODULUS_BIT_SIZE
}

fn check_scalars<E: GpuCurve>(
    scalars: &[<E::ScalarField as PrimeField>::BigInt],
) -> Result<(), CudaError> {
    use rayon::prelude::*;
    assert_eq!(std::mem::size_of_val(scalars), 32 * scalars.len());
    let r = E::ScalarField::MODULUS;
    match scalars.par_iter().position_first(|s| *s >= r) {
        Some(index) => Err(CudaError::ScalarOutOfRange { index }),
        None => Ok(()),
    }
}

impl<E: GpuCurve, G: GpuGroup<E>> Drop for Resident<E, G> {
    fn drop(&mut self) {
        let h = self.handle;
        // SAFETY: the handle came from G's `new` and is dropped once.
        unsafe { (G::fns().drop)(h) }
    }
}

/// The bucket digits of k scalar vectors of one length, sorted on the GPU once and shared
/// by every point set they multiply ([`Resident::batch_msm`]): the batched MSM's plan.
pub struct BatchPlan<E: GpuCurve> {
    handle: ffi::PlanHandle,
    k: usize,
    n: usize,
    /// Window width and bucket groups per proof the plan chose: the layout of a run's
    /// bit sums.
    wbits: usize,
    groups: usize,
    /// The window table's width the plan was made for (0: none).
    table_wbits: u32,
    device: i32,
    _curve: PhantomData<E>,
}

// SAFETY: read-only device data once built.
unsafe impl<E: GpuCurve> Send for BatchPlan<E> {}
unsafe impl<E: GpuCurve> Sync for BatchPlan<E> {}

impl<E: GpuCurve> BatchPlan<E> {
    /// Plans MSMs of the vectors at `vectors` (device addresses on GPU `device`, n
    /// scalars each, standard form or Montgomery with `mont`). With `constant_work`
    /// every digit, zero or not, is an entry and every bucket sum is computed, so the
    /// MSMs' work depends on the scalars' values only through how they fall into buckets
    /// (`zkpipe_core::BindOptions::constant_work`). `table_wbits`: the
    /// [`Resident::table_wbits`] of the sets it will run against, or 0 for any set (without
    /// its table). `opts`: the device set's options (its lab switches shape the plan).
    ///
    /// # Safety
    /// Every address must be device memory on `device` valid for `n` scalars (each < r),
    /// not written while the call runs. (The plan keeps no reference to them.)
    pub unsafe fn new(
        vectors: &[*const [u64; 4]],
        n: usize,
        mont: bool,
        constant_work: bool,
        table_wbits: u32,
        device: usize,
        opts: &crate::CudaOptions,
    ) -> Result<Self, CudaError> {
        let lab = opts.lab();
        check_device(device)?;
        let too_big = || CudaError::Length(format!("a batch of {} × {n} scalars", vectors.len()));
        let k = u32::try_from(vectors.len()).map_err(|_| too_big())?;
        let n32 = u32::try_from(n).map_err(|_| too_big())?;
        let ptrs: Vec<*const c_void> = vectors.iter().map(|&p| p as *const c_void).collect();
        let mut handle: ffi::PlanHandle = std::ptr::null_mut();
        let mut shape = [0u32; 2];
        check((E::fns().plan_new)(
            &mut handle,
            ptrs.as_ptr(),
            k,
            n32,
            mont,
            crate::shape::plan_piece_len(&lab, vectors.len(), n, table_wbits != 0),
            crate::shape::run_len(&lab, vectors.len(), n),
            crate::shape::run_gap(&lab),
            crate::shape::orders_pieces(&lab),
            constant_work,
            table_wbits,
            shape.as_mut_ptr(),
            device as i32,
        ))?;
        Ok(Self {
            handle,
            k: vectors.len(),
            n,
            wbits: shape[0] as usize,
            groups: shape[1] as usize,
            table_wbits,
            device: device as i32,
            _curve: PhantomData,
        })
    }

    /// Number of scalar vectors.
    pub fn len(&self) -> usize {
        self.k
    }

    /// True for a plan of no vectors (never made).
    pub fn is_empty(&self) -> bool {
        self.k == 0
    }
}

impl<E: GpuCurve> Drop for BatchPlan<E> {
    fn drop(&mut self) {
        // SAFETY: made by plan_new, dropped once, after every run that used it returned.
        unsafe { (E::fns().plan_drop)(self.handle) }
    }
}

/// Σ scalarsᵢ·pointsᵢ uploading the points for this call only (sppark's one-shot entry).
pub fn msm_oneshot<E: GpuCurve>(
    points: &[E::G1Affine],
    scalars: &[<E::ScalarField as PrimeField>::BigInt],
) -> Result<E::G1, CudaError> {
    if scalars.len() != points.len() {
        return Err(CudaError::Length(format!(
            "{} scalars for {} points",
            scalars.len(),
            points.len()
        )));
    }
    let mut out = vec![0u64; 3 * E::LIMBS];
    // SAFETY: as in Resident::upload and Resident::msm_raw.
    check(unsafe {
        (E::fns().g1_oneshot)(
            out.as_mut_ptr() as *mut c_void,
            points.as_ptr() as *const c_void,
            points.len(),
            scalars.as_ptr() as *const c_void,
            std::mem::size_of::<E::G1Affine>(),
        )
    })?;
    Ok(E::g1_from_jacobian_limbs(&out))
}

// Scalars cross as 4 little-endian words: true of both curves' scalar fields.
const _: () = assert!(std::mem::size_of::<<ark_bn254::Fr as PrimeField>::BigInt>() == 32);
const _: () = assert!(std::mem::size_of::<<ark_bls12_381::Fr as PrimeField>::BigInt>() == 32);
