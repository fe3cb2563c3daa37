//! The reduce on the GPU: a key's A and B matrices resident there ([`GpuMatrices`]), and
//! a = A·w, b = B·w, c = a∘b from a witness on the device into a quotient's buffers
//! ([`GpuQuotient::reduce_raw`]), so that only w crosses the bus.

use crate::enabled::curve::GpuCurve;
use crate::enabled::ffi;
use crate::enabled::quotient::GpuQuotient;
use crate::enabled::runtime::{check, check_device};
use crate::CudaError;
use std::ffi::c_void;
use std::marker::PhantomData;
use zkpipe_core::csr::Csr;

/// A key's A and B matrices resident on one GPU, for [`GpuQuotient::reduce_raw`].
pub struct GpuMatrices<E: GpuCurve> {
    handle: ffi::MatricesHandle,
    rows: usize,
    _curve: PhantomData<E>,
}

// SAFETY: read-only device data once uploaded.
unsafe impl<E: GpuCurve> Send for GpuMatrices<E> {}
unsafe impl<E: GpuCurve> Sync for GpuMatrices<E> {}

impl<E: GpuCurve> GpuMatrices<E> {
    /// Uploads `a` and `b` (the same number of rows; values in Montgomery form) to GPU
    /// `device`.
    pub fn upload(
        a: &Csr<E::ScalarField>,
        b: &Csr<E::ScalarField>,
        device: usize,
    ) -> Result<Self, CudaError> {
        check_device(device)?;
        let rows = a.rows();
        let well_formed = |m: &Csr<E::ScalarField>| {
            m.rows() == rows
                && m.row_starts.last().map(|&e| e as usize) == Some(m.cols.len())
                && m.cols.len() == m.vals.len()
        };
        if !well_formed(a) || !well_formed(b) {
            return Err(CudaError::Length(
                "A and B differ in rows, or a matrix's arrays disagree".into(),
            ));
        }
        let rows32 = u32::try_from(rows)
            .map_err(|_| CudaError::Length(format!("matrices of {rows} rows")))?;
        let mut handle: ffi::MatricesHandle = std::ptr::null_mut();
        // SAFETY: out-pointer to a live local; each array is a live slice of the lengths
        // checked above (rows + 1 offsets ending at the entry count), copied to the device
        // before the call returns. Field elements are their Montgomery limbs.
        check(unsafe {
            (E::fns().csr_new)(
                &mut handle,
                rows32,
                a.row_starts.as_ptr(),
                a.cols.as_ptr(),
                a.vals.as_ptr() as *const c_void,
                b.row_starts.as_ptr(),
                b.cols.as_ptr(),
                b.vals.as_ptr() as *const c_void,
                device as i32,
            )
        })?;
        Ok(Self {
            handle,
            rows,
            _curve: PhantomData,
        })
    }
}

impl<E: GpuCurve> Drop for GpuMatrices<E> {
    fn drop(&mut self) {
        // SAFETY: created by csr_new, dropped once.
        unsafe { (E::fns().csr_drop)(self.handle) }
    }
}

impl<E: GpuCurve> GpuQuotient<E> {
    /// An error unless `matrices` have one row per element of this quotient's domain.
    fn check_rows(&self, matrices: &GpuMatrices<E>) -> Result<(), CudaError> {
        if matrices.rows != self.size() {
            return Err(CudaError::Length(format!(
                "matrices of {} rows for a quotient of domain {}",
                matrices.rows,
                self.size()
            )));
        }
        Ok(())
    }

    /// a = A·w, b = B·w, c = a∘b on the GPU into this quotient's buffers, for a following
    /// [`Self::run_raw`] with null inputs. `w` is the key's witness in this GPU's memory,
    /// as standard-form scalars, or in Montgomery form with `mont` (as the MSMs read it).
    ///
    /// # Safety
    /// `w` must be a device address on this quotient's GPU valid for as many scalars as
    /// the matrices have columns, not written while the call runs.
    pub unsafe fn reduce_raw(
        &self,
        matrices: &GpuMatrices<E>,
        w: *const [u64; 4],
        mont: bool,
    ) -> Result<(), CudaError> {
        self.check_rows(matrices)?;
        let handle = self.handle();
        check((E::fns().reduce_run)(
            *handle,
            matrices.handle,
            w as *const c_void,
            mont,
        ))
    }

    /// One proof's whole quotient from its witness, in one call into the shim: `bytes`
    /// of `w_host` cross to `w_dev` on this quotient's stream, then the reduce (as
    /// [`Self::reduce_raw`]) and the quotient (as [`Self::run_raw`] with null inputs)
    /// run there, h staying on the GPU. With `graph` their kernels replay as one CUDA
    /// graph, captured on this quotient's first call (and again when the matrices, w's
    /// address, its form or k change). Returns the quotient's share of the GPU's time,
    /// where the GPU could say.
    ///
    /// # Safety
    /// `w_dev` must be device memory on this quotient's GPU of at least `bytes` bytes,
    /// and as many scalars as the matrices have columns; `w_host` valid for `bytes`
    /// (pinned for full speed); neither touched by others while the call runs.
    pub unsafe fn reduce_quotient_raw(
        &self,
        matrices: &GpuMatrices<E>,
        w_dev: *mut u8,
        w_host: *const u8,
        bytes: usize,
        mont: bool,
        graph: bool,
    ) -> Result<Option<std::time::Duration>, CudaError> {
        self.check_rows(matrices)?;
        let mut quotient_ms = -1.0f32;
        let handle = self.handle();
        check((E::fns().reduce_quotient)(
            *handle,
            matrices.handle,
            w_dev as *mut c_void,
            w_host as *const c_void,
            bytes,
            mont,
            self.k(),
            graph,
            &mut quotient_ms,
        ))?;
        Ok((quotient_ms >= 0.0).then(|| std::time::Duration::from_secs_f32(quotient_ms / 1e3)))
    }

    /// a, b, c of rows `rows` only (as [`Self::reduce_raw`] computes them), from those
    /// rows of A and B in device memory (a streamed key's chunk,
    /// `crate::enabled::streamed_reduce`): per matrix its `rows.len() + 1` row offsets,
    /// and its entries' columns and values (or narrow words and full values) from offset
    /// `base` on ([`ffi::ChunkRows`]); `long` lists the rows (from 0 within the chunk)
    /// with more than 32 entries in either matrix, and how many there are.
    ///
    /// # Safety
    /// Every address must be device memory on this quotient's GPU holding what it is
    /// said to (values in Montgomery form), and `w` as for [`Self::reduce_raw`]; none
    /// written while the call runs.
    pub unsafe fn reduce_rows_raw(
        &self,
        rows: std::ops::Range<usize>,
        matrices: [ffi::ChunkRows; 2],
        long: (*const u8, usize),
        w: *const [u64; 4],
        mont: bool,
    ) -> Result<(), CudaError> {
        let n = |v: usize, what: &str| {
            u32::try_from(v).map_err(|_| CudaError::Length(format!("{what} of {v}")))
        };
        if rows.end > self.size() {
            return Err(CudaError::Length(format!(
                "rows {rows:?} of a quotient of domain {}",
                self.size()
            )));
        }
        let (row0, count, n_long) = (
            n(rows.start, "a row")?,
            n(rows.len(), "a chunk")?,
            n(long.1, "long rows")?,
        );
        let handle = self.handle();
        check((E::fns().reduce_rows)(
            *handle,
            row0,
            count,
            matrices[0],
            matrices[1],
            long.0 as *const u32,
            n_long,
            w as *const c_void,
            mont,
        ))
    }
}
