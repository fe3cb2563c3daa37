//! The real GPU paths (feature `cuda`): safe wrappers over the shims in `cuda/`, and the
//! seam's [`CudaBound`] on top of them.
//!
//! ```text
//!  ffi        every extern "C" entry point of the shims (nothing else calls them)
//!  runtime    devices, the shims' error codes
//!  memory     pinned host buffers, device buffers
//!  curve      GpuCurve / GpuGroup: each curve's entry points, points back from the GPU
//!  msm        resident point sets; single and batched MSMs against them
//!  bits       the w MSMs' bit path: a witness of 0s and 1s split once, its 1s' points summed
//!  quotient   GpuQuotient: the quotient NTTs
//!  reduce     GpuMatrices: A and B resident, a, b, c computed on the GPU
//!  buffers    one proof's buffers in flight, lent from a key's pool
//!  mask       constant-work MSMs: a key's random mask on w and h, its sums taken off
//!  bound      CudaBound: a key bound to a GPU (zkpipe-core's BoundKey)
//!  pass       its device pass, for one proof or a batch
//!  streamed   a key larger than the device budget: its chunks' walk through the GPU
//!  streamed_msms  a streamed key's verbs and batched MSMs, over that walk
//!  streamed_reduce  a streamed key's matrices, crossing in chunks of rows for the reduce
//!  setup      GpuFixedBase: a dev key's fixed-base multiplications (`setup --dev`)
//! ```

mod bits;
mod bound;
mod buffers;
mod curve;
mod ffi;
mod mask;
mod memory;
mod msm;
mod pass;
mod quotient;
mod reduce;
mod runtime;
mod setup;
mod streamed;
mod streamed_msms;
mod streamed_reduce;

pub use bound::CudaBound;
pub use curve::{GpuCurve, GpuGroup, G1, G2};
pub use memory::{DeviceBuf, PinnedBuf};
pub use msm::{msm_oneshot, BatchPlan, Resident, ResidentG1, ResidentG2};
pub use quotient::GpuQuotient;
pub use reduce::GpuMatrices;
pub use runtime::{device_count, device_info, set_host_wait};
pub use setup::GpuFixedBase;

// blst provides host-side symbols sppark's headers call; link it.
extern crate blst;
