//! The CUDA runtime as the wrappers see it: which GPUs there are, what they are, and the
//! shims' error codes as [`CudaError`]s.

use crate::enabled::ffi;
use crate::{CudaError, GpuInfo, HostWait};

/// An sppark error struct from a curve shim as a result.
pub(crate) fn check(e: sppark::Error) -> Result<(), CudaError> {
    if e.code == 0 {
        Ok(())
    } else {
        Err(CudaError::Device {
            code: e.code,
            message: String::from(&e),
        })
    }
}

/// A cudaError_t code from `host.cu` as a result; `what` names the call.
pub(crate) fn check_rt(code: i32, what: &str) -> Result<(), CudaError> {
    if code == 0 {
        Ok(())
    } else {
        Err(CudaError::Device {
            code,
            message: format!("{what} failed"),
        })
    }
}

/// Number of CUDA devices this process can use (0 when there is no driver or device).
pub fn device_count() -> usize {
    // SAFETY: plain runtime query.
    unsafe { ffi::zkp_device_count() }.max(0) as usize
}

/// Device `device`'s name and memory, or [`CudaError::NoDevice`].
pub fn device_info(device: usize) -> Result<GpuInfo, CudaError> {
    check_device(device)?;
    let dev = device as i32;
    let (mut free, mut total) = (0usize, 0usize);
    let mut name = [0u8; 256];
    // SAFETY: out-pointers to live locals; the name buffer's length is passed.
    unsafe {
        check_rt(
            ffi::zkp_device_memory(dev, &mut free, &mut total),
            "cudaMemGetInfo",
        )?;
        check_rt(
            ffi::zkp_device_name(dev, name.as_mut_ptr() as *mut _, name.len()),
            "cudaGetDeviceProperties",
        )?;
    }
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(GpuInfo {
        name: String::from_utf8_lossy(&name[..len]).into_owned(),
        free_bytes: free,
        total_bytes: total,
    })
}

/// [`CudaError::NoDevice`] without GPUs, [`CudaError::NoSuchDevice`] for an index beyond them.
pub(crate) fn check_device(device: usize) -> Result<(), CudaError> {
    match device_count() {
        0 => Err(CudaError::NoDevice),
        count if device >= count => Err(CudaError::NoSuchDevice {
            index: device,
            count,
        }),
        _ => Ok(()),
    }
}

/// Makes host threads wait for device `device`'s work as `wait` says (its context's
/// scheduling flag; CUDA 12 and later apply it to a context already made).
pub fn set_host_wait(device: usize, wait: HostWait) -> Result<(), CudaError> {
    check_device(device)?;
    const SCHEDULE_MASK: u32 = 0x07;
    let mut flags = 0u32;
    // SAFETY: plain runtime calls on a device that exists; an out-pointer to a live local.
    unsafe {
        check_rt(ffi::cudaSetDevice(device as i32), "cudaSetDevice")?;
        check_rt(ffi::cudaGetDeviceFlags(&mut flags), "cudaGetDeviceFlags")?;
        let wanted = (flags & !SCHEDULE_MASK) | wait.cuda_flag();
        check_rt(ffi::cudaSetDeviceFlags(wanted), "cudaSetDeviceFlags")?;
        check_rt(ffi::cudaGetDeviceFlags(&mut flags), "cudaGetDeviceFlags")?;
    }
    if flags & SCHEDULE_MASK != wait.cuda_flag() {
        return Err(CudaError::Device {
            code: 0,
            message: format!(
                "GPU {device} kept scheduling flag {:#x}",
                flags & SCHEDULE_MASK
            ),
        });
    }
    Ok(())
}
