//! The C entry points of the CUDA shims (`cuda/*.cu`). The curve shims return sppark's
//! error struct by value; `host.cu` returns cudaError_t codes. No C++ exception crosses
//! into Rust.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

/// Opaque `msm_t` (G1 or G2) holding points on the device.
pub type MsmHandle = *mut c_void;
/// Opaque `zkp_quotient_t` holding the NTT buffers of one domain size.
pub type QuotientHandle = *mut c_void;

macro_rules! curve_entries {
    ($g1_new:ident, $g1_drop:ident, $g1_msm:ident, $g1_oneshot:ident,
     $g2_new:ident, $g2_drop:ident, $g2_msm:ident,
     $q_new:ident, $q_drop:ident, $q_run:ident, $q_h:ident) => {
        extern "C" {
            pub fn $g1_new(
                out: *mut MsmHandle,
                points: *const c_void,
                n: usize,
                affine_sz: usize,
                dev: c_int,
            ) -> sppark::Error;
            pub fn $g1_drop(h: MsmHandle);
            pub fn $g1_msm(
                h: MsmHandle,
                out: *mut c_void,
                scalars: *const c_void,
                n: usize,
                mont: bool,
                dev: c_int,
                on_device: bool,
            ) -> sppark::Error;
            pub fn $g1_oneshot(
                out: *mut c_void,
                points: *const c_void,
                n: usize,
                scalars: *const c_void,
                affine_sz: usize,
            ) -> sppark::Error;
            pub fn $g2_new(
                out: *mut MsmHandle,
                points: *const c_void,
                n: usize,
                affine_sz: usize,
                dev: c_int,
            ) -> sppark::Error;
            pub fn $g2_drop(h: MsmHandle);
            pub fn $g2_msm(
                h: MsmHandle,
                out: *mut c_void,
                scalars: *const c_void,
                n: usize,
                mont: bool,
                dev: c_int,
                on_device: bool,
            ) -> sppark::Error;
            pub fn $q_new(
                out: *mut QuotientHandle,
                lg_n: u32,
                powers: *const c_void,
                dev: c_int,
            ) -> sppark::Error;
            pub fn $q_drop(q: QuotientHandle);
            pub fn $q_run(
                q: QuotientHandle,
                a: *const c_void,
                b: *const c_void,
                c: *const c_void,
                h: *mut c_void,
                k: u64,
            ) -> sppark::Error;
            pub fn $q_h(q: QuotientHandle) -> *const c_void;
        }
    };
}

curve_entries!(
    zkp_g1_points_new_bn254,
    zkp_g1_points_drop_bn254,
    zkp_g1_msm_bn254,
    zkp_g1_msm_oneshot_bn254,
    zkp_g2_points_new_bn254,
    zkp_g2_points_drop_bn254,
    zkp_g2_msm_bn254,
    zkp_quotient_new_bn254,
    zkp_quotient_drop_bn254,
    zkp_quotient_run_bn254,
    zkp_quotient_h_bn254
);
curve_entries!(
    zkp_g1_points_new_bls12_381,
    zkp_g1_points_drop_bls12_381,
    zkp_g1_msm_bls12_381,
    zkp_g1_msm_oneshot_bls12_381,
    zkp_g2_points_new_bls12_381,
    zkp_g2_points_drop_bls12_381,
    zkp_g2_msm_bls12_381,
    zkp_quotient_new_bls12_381,
    zkp_quotient_drop_bls12_381,
    zkp_quotient_run_bls12_381,
    zkp_quotient_h_bls12_381
);

extern "C" {
    pub fn zkp_device_count() -> c_int;
    pub fn zkp_device_memory(dev: c_int, free: *mut usize, total: *mut usize) -> c_int;
    pub fn zkp_device_name(dev: c_int, buf: *mut c_char, len: usize) -> c_int;
    pub fn zkp_device_alloc(dev: c_int, out: *mut *mut c_void, bytes: usize) -> c_int;
    pub fn zkp_device_free(dev: c_int, p: *mut c_void);
    pub fn zkp_device_upload(
        dev: c_int,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> c_int;
    pub fn zkp_pinned_alloc(out: *mut *mut c_void, bytes: usize) -> c_int;
    pub fn zkp_pinned_free(p: *mut c_void);
}
