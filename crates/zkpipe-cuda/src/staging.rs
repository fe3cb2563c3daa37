//! Which kind of pinned host memory stages uploads to the GPU (the witness, and a, b, c
//! where the reduce runs on the host): process-wide, set once at start from the daemon's
//! configuration (`device.pinned_upload`). Write-combined memory skips the CPU caches: the
//! CPU's writes stream out, its reads crawl; one report measured it 6–7× slower for
//! device-to-host transfers (`../shared/reference/pinned-writecombined.md`).

use std::sync::atomic::{AtomicU8, Ordering};

/// A kind of page-locked host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PinnedKind {
    /// `cudaHostAllocPortable`: cached, visible to every CUDA context.
    #[default]
    Portable,
    /// `cudaHostAllocPortable | cudaHostAllocWriteCombined`.
    WriteCombined,
}

impl std::str::FromStr for PinnedKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "portable" => Ok(Self::Portable),
            "write-combined" => Ok(Self::WriteCombined),
            _ => Err(format!(
                "pinned memory {s:?}: expected portable or write-combined"
            )),
        }
    }
}

static UPLOAD: AtomicU8 = AtomicU8::new(0);

/// Sets the kind of the staging buffers made from now on.
pub fn set_upload_staging(kind: PinnedKind) {
    UPLOAD.store(kind as u8, Ordering::Relaxed);
}

/// The kind upload staging buffers are made of.
pub fn upload_staging() -> PinnedKind {
    match UPLOAD.load(Ordering::Relaxed) {
        1 => PinnedKind::WriteCombined,
        _ => PinnedKind::Portable,
    }
}
