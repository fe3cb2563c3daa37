//! The reduce on the GPU for a streamed key ([`crate::enabled::streamed`]): its A and B
//! matrices stay in host memory like its points and cross in chunks of rows
//! ([`zkpipe_core::csr::row_chunks`], each at most the plan's chunk bytes). A chunk is
//! packed into one of the key's two pinned staging buffers and copied into one of two
//! device buffers while the chunk before it is reduced; every proof of the pass reduces
//! its rows of a chunk while the chunk is there, so one stream of the matrices serves the
//! whole batch, as one stream of the points does.
//!
//! The buffers are made per pass and dropped before its MSMs walk the points: a streamed
//! key's passes run one at a time, so they use the device memory its plan keeps for the
//! two chunks in flight and their scratch (`StreamPlan::device_bytes`), nothing more.

use crate::enabled::curve::GpuCurve;
use crate::enabled::memory::{DeviceBuf, PinnedBuf};
use crate::enabled::quotient::GpuQuotient;
use crate::CudaError;
use std::ops::Range;
use zkpipe_core::csr::{row_chunks, Csr, RowChunkLayout, RowChunkShape};

/// Rows with more entries than this in A or B are summed by a warp each (reduce.cuh's
/// `ZKP_LONG_ROW`).
const LONG_ROW: u32 = 32;

/// A streamed key's matrices as they cross: their row chunks, each with its layout on the
/// device (made once, at binding).
pub(crate) struct StreamedMatrices {
    chunks: Vec<(Range<usize>, RowChunkLayout)>,
    shape: RowChunkShape,
}

impl StreamedMatrices {
    /// A's and B's rows cut into chunks of at most `max` bytes as the device holds them.
    pub(crate) fn cut<F>(a: &Csr<F>, b: &Csr<F>, max: u64) -> Result<Self, CudaError> {
        let shape = RowChunkShape {
            value_bytes: std::mem::size_of::<F>() as u64,
            long_row: LONG_ROW,
            align: 64,
        };
        let chunks = row_chunks(&a.row_starts, &b.row_starts, shape, max)
            .map_err(|e| CudaError::Length(format!("the key's matrices cannot stream: {e}")))?
            .into_iter()
            .map(|r| {
                let layout = shape.layout_of(&a.row_starts, &b.row_starts, &r);
                (r, layout)
            })
            .collect();
        Ok(Self { chunks, shape })
    }

    /// a = A·w, b = B·w, c = a∘b into each of `proofs`' quotient buffers, each from its
    /// witness on the device (`w`: an address on `gpu` of the key's nVars values, in
    /// Montgomery form with `mont`, not written meanwhile), the matrices walked once for
    /// all of them through `staging` (the key's two pinned buffers, each at least the
    /// chunks' size).
    pub(crate) fn reduce<E: GpuCurve>(
        &self,
        staging: &mut [PinnedBuf; 2],
        (a, b): (&Csr<E::ScalarField>, &Csr<E::ScalarField>),
        proofs: &[(&GpuQuotient<E>, usize)],
        mont: bool,
        gpu: usize,
    ) -> Result<(), CudaError> {
        let largest = self.chunks.iter().map(|(_, l)| l.bytes).max();
        let Some(bytes) = largest.filter(|_| !proofs.is_empty()) else {
            return Ok(());
        };
        let bytes = bytes as usize;
        let mut on_device = [DeviceBuf::new(gpu, bytes)?, DeviceBuf::new(gpu, bytes)?];
        let cross = |i: usize, stage: &mut PinnedBuf, dev: &mut DeviceBuf| {
            let (rows, layout) = &self.chunks[i];
            self.pack(a, b, rows, layout, stage)?;
            // SAFETY: the staging buffer holds the packed chunk's `layout.bytes` bytes.
            unsafe { dev.upload_raw(stage.ptr_at(0), layout.bytes as usize) }
        };
        cross(0, &mut staging[0], &mut on_device[0])?;
        for (i, (rows, layout)) in self.chunks.iter().enumerate() {
            let (first, second) = on_device.split_at_mut(1);
            let (current, next) = match i % 2 {
                0 => (&first[0], &mut second[0]),
                _ => (&second[0], &mut first[0]),
            };
            let next_stage = &mut staging[(i + 1) % 2];
            let upcoming = (i + 1 < self.chunks.len()).then_some(i + 1);
            std::thread::scope(|s| {
                // The next chunk crosses while this one is reduced.
                let crossing = upcoming.map(|n| s.spawn(move || cross(n, next_stage, next)));
                let bases = [a.row_starts[rows.start], b.row_starts[rows.start]];
                let done = proofs.iter().try_for_each(|&(q, w)| {
                    // SAFETY: `current` holds the chunk `layout` describes, on `gpu`;
                    // `w` is the caller's witness there.
                    unsafe { reduce_chunk(q, rows, bases, current, layout, w, mont) }
                });
                let crossed = crossing.map_or(Ok(()), |c| {
                    c.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
                });
                done.and(crossed)
            })?;
        }
        Ok(())
    }

    /// Packs rows `r` of A and B into `stage` as `layout` (theirs) places them.
    fn pack<F: Copy + Send + Sync>(
        &self,
        a: &Csr<F>,
        b: &Csr<F>,
        r: &Range<usize>,
        layout: &RowChunkLayout,
        stage: &mut PinnedBuf,
    ) -> Result<(), CudaError> {
        if layout.bytes as usize > stage.len() {
            return Err(CudaError::Length(format!(
                "a chunk of {} matrix bytes into {} staging bytes",
                layout.bytes,
                stage.len()
            )));
        }
        let _burst = zkpipe_core::throttle::burst();
        let long: Vec<u32> = r
            .clone()
            .filter(|&i| self.shape.is_long(&a.row_starts, &b.row_starts, i))
            .map(|i| (i - r.start) as u32)
            .collect();
        for (m, csr) in [a, b].into_iter().enumerate() {
            let entries = csr.row_starts[r.start] as usize..csr.row_starts[r.end] as usize;
            stage.stage(layout.starts[m] as usize, &csr.row_starts[r.start..=r.end]);
            stage.stage(layout.cols[m] as usize, &csr.cols[entries.clone()]);
            stage.stage(layout.vals[m] as usize, &csr.vals[entries]);
        }
        stage.stage(layout.long as usize, &long);
        Ok(())
    }
}

/// The reduce of rows `rows` into `q`'s buffers from the chunk in `chunk` (A's and B's
/// entries from their offsets `bases` on).
///
/// # Safety
/// `chunk` must hold rows `rows` of A and B laid out as `layout` says, on `q`'s GPU, and
/// `w` the key's witness there.
unsafe fn reduce_chunk<E: GpuCurve>(
    q: &GpuQuotient<E>,
    rows: &Range<usize>,
    bases: [u32; 2],
    chunk: &DeviceBuf,
    layout: &RowChunkLayout,
    w: usize,
    mont: bool,
) -> Result<(), CudaError> {
    let at = |offset: u64| chunk.device_ptr(offset as usize);
    q.reduce_rows_raw(
        rows.clone(),
        bases,
        [at(layout.starts[0]), at(layout.starts[1])],
        [at(layout.cols[0]), at(layout.cols[1])],
        [at(layout.vals[0]), at(layout.vals[1])],
        (at(layout.long), layout.long_rows),
        w as *const [u64; 4],
        mont,
    )
}
