//! The reduce on the GPU for a streamed key ([`crate::enabled::streamed`]): its A and B
//! matrices stay in host memory like its points and cross in chunks of rows
//! ([`zkpipe_core::csr::row_chunks`], each at most the plan's chunk bytes). A chunk is
//! packed into one of the key's two pinned staging buffers and copied into one of two
//! device buffers while the chunk before it is reduced; every proof of the pass reduces
//! its rows of a chunk while the chunk is there, so one stream of the matrices serves the
//! whole batch, as one stream of the points does.
//!
//! Pinned (`crate::enabled::streamed::Streamed::pin`), every chunk is packed once into
//! page-locked memory at binding's layout, and a walk only copies: no packing per pass.
//!
//! The values cross narrow ([`zkpipe_core::csr::NarrowValues`], made at binding): a
//! 4-byte word an entry, small values inline and the rest as full field elements after
//! them, so a chunk of a circuit's mostly small coefficients is ~4× fewer bytes than
//! with a field element an entry (reduce.cuh's `zkp_entry` reads both).
//!
//! The buffers are made per pass and dropped before its MSMs walk the points: a streamed
//! key's passes run one at a time, so they use the device memory its plan keeps for the
//! two chunks in flight and their scratch (`StreamPlan::device_bytes`), nothing more.

use crate::enabled::curve::GpuCurve;
use crate::enabled::ffi::ChunkRows;
use crate::enabled::memory::{DeviceBuf, PinnedBuf};
use crate::enabled::quotient::GpuQuotient;
use crate::CudaError;
use ark_ff::PrimeField;
use std::ops::Range;
use zkpipe_core::csr::{row_chunks, Csr, NarrowValues, RowChunkLayout, RowChunkShape, RowOffsets};

/// Rows with more entries than this in A or B are summed by a warp each (reduce.cuh's
/// `ZKP_LONG_ROW`).
const LONG_ROW: u32 = 32;

/// A streamed key's matrices as they cross: their row chunks, each with its layout on the
/// device (made once, at binding), where each starts in a pinned copy of them all, and
/// A's and B's values in their narrow form.
pub(crate) struct StreamedMatrices {
    chunks: Vec<(Range<usize>, RowChunkLayout)>,
    /// Byte offset of each chunk in the pinned copy ([`Self::pack_all`]), then its length.
    offsets: Vec<usize>,
    shape: RowChunkShape,
    /// `None` where the values cross as field elements (`LabSwitches::wide_matrices`).
    narrow: Option<Box<[Narrow; 2]>>,
}

/// One matrix's [`NarrowValues`], its full values as the bytes the device reads (their
/// Montgomery limbs, as `PinnedBuf::stage` copies field elements).
struct Narrow {
    words: Vec<u32>,
    full: Vec<u8>,
    full_starts: Vec<u32>,
    full_bytes: usize,
}

impl Narrow {
    fn of<F: PrimeField>(m: &Csr<F>) -> Result<Self, CudaError> {
        let n = NarrowValues::of(m).map_err(|e| CudaError::Length(e.to_string()))?;
        let full_bytes = std::mem::size_of::<F>();
        let mut full = vec![0u8; n.full.len() * full_bytes];
        // SAFETY: copies the bytes of `n.full` (field elements: limbs, no padding) into a
        // buffer of as many bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                n.full.as_ptr() as *const u8,
                full.as_mut_ptr(),
                full.len(),
            )
        };
        Ok(Self {
            words: n.words,
            full,
            full_starts: n.full_starts,
            full_bytes,
        })
    }

    /// The full values of rows `r`, as bytes.
    fn full_of(&self, r: &Range<usize>) -> &[u8] {
        let (from, to) = (self.full_starts[r.start], self.full_starts[r.end]);
        &self.full[from as usize * self.full_bytes..to as usize * self.full_bytes]
    }
}

/// Where a chunk starts in the pinned copy: the device's alignment, so every chunk copies
/// from an aligned address as it does from a staging buffer.
const PINNED_ALIGN: usize = 64;

impl StreamedMatrices {
    /// A's and B's rows cut into chunks of at most `max` bytes as the device holds them,
    /// their values narrow, or field elements where `wide`.
    pub(crate) fn cut<F: PrimeField>(
        a: &Csr<F>,
        b: &Csr<F>,
        max: u64,
        wide: bool,
    ) -> Result<Self, CudaError> {
        let narrow = match wide {
            true => None,
            false => Some(Box::new([Narrow::of(a)?, Narrow::of(b)?])),
        };
        // Narrow: a word an entry, full values after; wide: a field element an entry.
        let field = std::mem::size_of::<F>() as u64;
        let (value_bytes, full_bytes) = match narrow {
            Some(_) => (4, field),
            None => (field, 0),
        };
        let shape = RowChunkShape {
            value_bytes,
            full_bytes,
            long_row: LONG_ROW,
            align: 64,
        };
        let offsets = RowOffsets {
            entries: [&a.row_starts, &b.row_starts],
            full: narrow
                .as_ref()
                .map(|n| [&n[0].full_starts[..], &n[1].full_starts[..]]),
        };
        let chunks = row_chunks(offsets, shape, max)
            .map_err(|e| CudaError::Length(format!("the key's matrices cannot stream: {e}")))?
            .into_iter()
            .map(|r| {
                let layout = shape.layout_of(offsets, &r);
                (r, layout)
            })
            .collect::<Vec<_>>();
        let mut offsets = Vec::with_capacity(chunks.len() + 1);
        let mut at = 0usize;
        for (_, layout) in &chunks {
            offsets.push(at);
            at = (at + layout.bytes as usize).next_multiple_of(PINNED_ALIGN);
        }
        offsets.push(at);
        Ok(Self {
            chunks,
            offsets,
            shape,
            narrow,
        })
    }

    /// Host bytes it holds: the narrow values of A and B (made at binding) and the chunks'
    /// layout.
    pub(crate) fn host_bytes(&self) -> usize {
        let narrow = self
            .narrow
            .iter()
            .flat_map(|n| n.iter())
            .map(|n| 4 * n.words.len() + n.full.len() + 4 * n.full_starts.len());
        let layout = std::mem::size_of::<(Range<usize>, RowChunkLayout)>() * self.chunks.len()
            + std::mem::size_of::<usize>() * self.offsets.len();
        narrow.sum::<usize>() + layout
    }

    /// Bytes of every chunk packed one after another ([`Self::pack_all`]).
    pub(crate) fn packed_bytes(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }

    /// Packs every chunk of A and B into `dst` ([`Self::packed_bytes`] long) at its
    /// offset: the pinned copy a walk then copies from.
    pub(crate) fn pack_all<F: Copy + Send + Sync>(
        &self,
        a: &Csr<F>,
        b: &Csr<F>,
        dst: &mut PinnedBuf,
    ) -> Result<(), CudaError> {
        for (i, (rows, layout)) in self.chunks.iter().enumerate() {
            self.pack(a, b, rows, layout, dst, self.offsets[i])?;
        }
        Ok(())
    }

    /// a = A·w, b = B·w, c = a∘b into each of `proofs`' quotient buffers, each from its
    /// witness on the device (`w`: an address on `gpu` of the key's nVars values, in
    /// Montgomery form with `mont`, not written meanwhile), the matrices walked once for
    /// all of them: each chunk copied from `pinned` (the key's pinned copy,
    /// [`Self::pack_all`]) where there is one, else packed through `staging` (the key's
    /// two pinned buffers, each at least the chunks' size; one of the two is needed).
    pub(crate) fn reduce<E: GpuCurve>(
        &self,
        pinned: Option<&PinnedBuf>,
        staging: Option<&mut [PinnedBuf; 2]>,
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
        if pinned.is_some_and(|p| p.len() < self.packed_bytes()) {
            return Err(CudaError::Length(
                "a pinned copy of the matrices shorter than their chunks".into(),
            ));
        }
        let mut staging = staging;
        if pinned.is_none() && staging.is_none() {
            return Err(CudaError::Length(
                "unpinned matrices with no staging buffers".into(),
            ));
        }
        let cross = |i: usize, stage: Option<&mut PinnedBuf>, dev: &mut DeviceBuf| {
            let (rows, layout) = &self.chunks[i];
            let bytes = layout.bytes as usize;
            match (pinned, stage) {
                (Some(p), _) => {
                    let _burst = zkpipe_core::throttle::burst();
                    // SAFETY: the pinned copy holds chunk i's `bytes` bytes at its offset
                    // (its length checked above), packed once and never written again.
                    unsafe { dev.upload_raw(p.as_ptr().add(self.offsets[i]), bytes) }
                }
                (None, Some(stage)) => {
                    self.pack(a, b, rows, layout, stage, 0)?;
                    // SAFETY: the staging buffer holds the packed chunk's bytes.
                    unsafe { dev.upload_raw(stage.ptr_at(0), bytes) }
                }
                (None, None) => unreachable!("checked above: pinned or staged"),
            }
        };
        cross(0, staging.as_mut().map(|s| &mut s[0]), &mut on_device[0])?;
        for (i, (rows, layout)) in self.chunks.iter().enumerate() {
            let (first, second) = on_device.split_at_mut(1);
            let (current, next) = match i % 2 {
                0 => (&first[0], &mut second[0]),
                _ => (&second[0], &mut first[0]),
            };
            let next_stage = staging.as_mut().map(|s| &mut s[(i + 1) % 2]);
            let upcoming = (i + 1 < self.chunks.len()).then_some(i + 1);
            std::thread::scope(|s| {
                // The next chunk crosses while this one is reduced.
                let crossing = upcoming.map(|n| s.spawn(move || cross(n, next_stage, next)));
                let at = |offset: u64| current.device_ptr(offset as usize);
                let matrix = |m: usize, row_starts: &[u32]| {
                    // Narrow: the words where the values would be, the full values after.
                    let (vals, words, full_base) = match &self.narrow {
                        Some(n) => (
                            layout.full[m],
                            at(layout.vals[m]),
                            n[m].full_starts[rows.start],
                        ),
                        None => (layout.vals[m], std::ptr::null(), 0),
                    };
                    ChunkRows {
                        starts: at(layout.starts[m]) as *const u32,
                        cols: at(layout.cols[m]) as *const u32,
                        vals: at(vals) as *const std::ffi::c_void,
                        words: words as *const u32,
                        base: row_starts[rows.start],
                        full_base,
                    }
                };
                let matrices = [matrix(0, &a.row_starts), matrix(1, &b.row_starts)];
                let long = (at(layout.long), layout.long_rows);
                let done = proofs.iter().try_for_each(|&(q, w)| {
                    // SAFETY: `current` holds the chunk `layout` describes, on `gpu` (the
                    // addresses above); `w` is the caller's witness there.
                    unsafe {
                        q.reduce_rows_raw(rows.clone(), matrices, long, w as *const [u64; 4], mont)
                    }
                });
                let crossed = crossing.map_or(Ok(()), |c| {
                    c.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
                });
                done.and(crossed)
            })?;
        }
        Ok(())
    }

    /// Packs rows `r` of A and B into `stage` from byte `base` on, as `layout` (theirs)
    /// places them.
    fn pack<F: Copy + Send + Sync>(
        &self,
        a: &Csr<F>,
        b: &Csr<F>,
        r: &Range<usize>,
        layout: &RowChunkLayout,
        stage: &mut PinnedBuf,
        base: usize,
    ) -> Result<(), CudaError> {
        if base + layout.bytes as usize > stage.len() {
            return Err(CudaError::Length(format!(
                "a chunk of {} matrix bytes into {} staging bytes",
                layout.bytes,
                stage.len().saturating_sub(base)
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
            let at = |offset: u64| base + offset as usize;
            stage.stage(at(layout.starts[m]), &csr.row_starts[r.start..=r.end]);
            stage.stage(at(layout.cols[m]), &csr.cols[entries.clone()]);
            match &self.narrow {
                Some(narrow) => {
                    stage.stage(at(layout.vals[m]), &narrow[m].words[entries]);
                    stage.stage(at(layout.full[m]), narrow[m].full_of(r));
                }
                None => {
                    stage.stage(at(layout.vals[m]), &csr.vals[entries]);
                }
            }
        }
        stage.stage(base + layout.long as usize, &long);
        Ok(())
    }
}
