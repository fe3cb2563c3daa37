//! Memory the wrappers own: [`PinnedBuf`], page-locked host memory that every transfer
//! to and from the GPU goes through, and [`DeviceBuf`], a buffer on one GPU (a proof's
//! witness, uploaded once and read by several MSMs there).

use crate::enabled::ffi;
use crate::enabled::runtime::{check_device, check_rt};
use crate::{CudaError, PinnedKind};
use std::ffi::c_void;

/// Memory of our own on one GPU (e.g. a proof's witness scalars, uploaded once and read by
/// several MSMs there).
pub struct DeviceBuf {
    ptr: *mut c_void,
    bytes: usize,
    device: i32,
}

// SAFETY: device memory, not tied to a host thread; writes go through &mut self.
unsafe impl Send for DeviceBuf {}
unsafe impl Sync for DeviceBuf {}

impl DeviceBuf {
    /// `bytes` of device memory on `device` (contents unspecified).
    pub fn new(device: usize, bytes: usize) -> Result<Self, CudaError> {
        check_device(device)?;
        let mut p: *mut c_void = std::ptr::null_mut();
        let dev = device as i32;
        // SAFETY: out-pointer to a live local.
        check_rt(
            unsafe { ffi::zkp_device_alloc(dev, &mut p, bytes.max(1)) },
            "cudaMalloc",
        )?;
        Ok(Self {
            ptr: p,
            bytes,
            device: dev,
        })
    }

    /// Copies `src` (pinned memory for full speed) to the start of the buffer; returns
    /// when the copy is done.
    ///
    /// # Safety
    /// `src` must be valid for `bytes` bytes.
    pub unsafe fn upload_raw(&mut self, src: *const u8, bytes: usize) -> Result<(), CudaError> {
        assert!(bytes <= self.bytes, "device buffer too small");
        // SAFETY: the buffer is ours (&mut self) and holds `bytes`; `src` as the caller says.
        unsafe { upload_to(self.device as usize, self.ptr as usize, src, bytes) }
    }

    /// The device address of its start, for a shim call that writes it (`&mut`: the
    /// buffer is the caller's while it holds the address).
    pub fn device_ptr_mut(&mut self) -> *mut u8 {
        self.ptr as *mut u8
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// True for a buffer of no bytes (one byte is allocated all the same).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The device address at byte `offset` (for kernels reading the buffer).
    pub fn device_ptr(&self, offset: usize) -> *const u8 {
        assert!(offset <= self.bytes);
        (self.ptr as *const u8).wrapping_add(offset)
    }
}

/// Copies `bytes` from `src` (pinned memory for full speed) to the device address `dst` on
/// `device`; returns when the copy is done. On a non-blocking stream of its own
/// (`cuda/host.cu`), so it overlaps kernels other threads run meanwhile. `device` is not
/// checked against the device count here (the callers' buffers were made on it); the shim
/// fails on one that does not exist.
///
/// # Safety
/// `src` must be valid for `bytes` bytes, and `dst` device memory on `device` of at least
/// `bytes` bytes that nothing reads or writes until this returns.
pub(crate) unsafe fn upload_to(
    device: usize,
    dst: usize,
    src: *const u8,
    bytes: usize,
) -> Result<(), CudaError> {
    // SAFETY: as the caller says.
    check_rt(
        unsafe {
            ffi::zkp_device_upload(
                device as i32,
                dst as *mut c_void,
                src as *const c_void,
                bytes,
            )
        },
        "cudaMemcpy",
    )
}

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by zkp_device_alloc on this device, freed once.
        unsafe { ffi::zkp_device_free(self.device, self.ptr) }
    }
}

/// Page-locked, portable host memory (`cudaHostAlloc`): what every transfer to and from
/// the GPU goes through, because pageable copies are 20–50× slower on the GPU machine.
pub struct PinnedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: plain host memory owned by this value.
unsafe impl Send for PinnedBuf {}
unsafe impl Sync for PinnedBuf {}

impl PinnedBuf {
    /// `bytes` of portable pinned memory (contents unspecified).
    pub fn new(bytes: usize) -> Result<Self, CudaError> {
        Self::with_kind(bytes, PinnedKind::Portable)
    }

    /// `bytes` of pinned memory of `kind` (contents unspecified).
    pub fn with_kind(bytes: usize, kind: PinnedKind) -> Result<Self, CudaError> {
        const PORTABLE: u32 = 1;
        const WRITE_COMBINED: u32 = 4;
        let flags = match kind {
            PinnedKind::Portable => PORTABLE,
            PinnedKind::WriteCombined => PORTABLE | WRITE_COMBINED,
        };
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a live local.
        check_rt(
            unsafe { ffi::cudaHostAlloc(&mut p, bytes.max(1), flags) },
            "cudaHostAlloc",
        )?;
        Ok(Self {
            ptr: p as *mut u8,
            len: bytes,
        })
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `src` to the start of the buffer (in parallel) and returns its pinned copy.
    /// `T` must be plain data (field elements, integers).
    pub fn stage<T: Copy + Send + Sync>(&mut self, offset: usize, src: &[T]) -> *const T {
        let bytes = std::mem::size_of_val(src);
        assert!(
            offset + bytes <= self.len,
            "pinned staging buffer too small"
        );
        // SAFETY: the destination range is inside the allocation (checked above) and does
        // not overlap `src` (pinned memory is ours alone); T is Copy plain data.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset) as *mut T, src.len()) };
        parallel_copy(dst, src);
        dst.as_ptr()
    }

    /// The `n` values of `T` at byte `offset`, copied out (in parallel) into `dst`.
    pub fn unstage<T: Copy + Send + Sync>(&self, offset: usize, dst: &mut [T]) {
        assert!(offset + std::mem::size_of_val(dst) <= self.len);
        // SAFETY: inside the allocation, initialized by the device before this call.
        let src =
            unsafe { std::slice::from_raw_parts(self.ptr.add(offset) as *const T, dst.len()) };
        parallel_copy(dst, src);
    }

    /// Copies `bytes` from device address `src` to byte `offset` of the buffer and waits
    /// (results back; for measuring the kinds against each other).
    ///
    /// # Safety
    /// `src` must be a device address on the current device valid for `bytes` bytes.
    pub unsafe fn download_raw(
        &mut self,
        offset: usize,
        src: *const u8,
        bytes: usize,
    ) -> Result<(), CudaError> {
        assert!(offset + bytes <= self.len);
        const DEVICE_TO_HOST: i32 = 2;
        check_rt(
            ffi::cudaMemcpy(
                self.ptr.add(offset) as *mut c_void,
                src as *const c_void,
                bytes,
                DEVICE_TO_HOST,
            ),
            "cudaMemcpy",
        )
    }

    /// Its first byte (for reading the buffer where it is shared).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// Raw pointer at byte `offset`.
    pub fn ptr_at(&mut self, offset: usize) -> *mut u8 {
        assert!(offset <= self.len);
        // SAFETY: within the allocation.
        unsafe { self.ptr.add(offset) }
    }
}

fn parallel_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 14;
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by cudaHostAlloc, freed once.
        unsafe { ffi::zkp_pinned_free(self.ptr as *mut c_void) }
    }
}
