//! The C entry points of the CUDA shims (`cuda/*.cu`). Every one returns sppark's error
//! struct by value; no C++ exception crosses into Rust.
#![allow(unsafe_code)]

use std::ffi::c_void;

/// Opaque `msm_t` holding points on the device.
pub type MsmHandle = *mut c_void;

extern "C" {
    pub fn zkp_g1_points_new_bn254(
        out: *mut MsmHandle,
        points: *const c_void,
        n: usize,
        affine_sz: usize,
    ) -> sppark::Error;
    pub fn zkp_g1_points_drop_bn254(h: MsmHandle);
    pub fn zkp_g1_msm_bn254(
        h: MsmHandle,
        out: *mut c_void,
        scalars: *const c_void,
        n: usize,
    ) -> sppark::Error;
    pub fn zkp_g1_msm_oneshot_bn254(
        out: *mut c_void,
        points: *const c_void,
        n: usize,
        scalars: *const c_void,
        affine_sz: usize,
    ) -> sppark::Error;
    pub fn zkp_g1_msm_oneshot_bls12_381(
        out: *mut c_void,
        points: *const c_void,
        n: usize,
        scalars: *const c_void,
        affine_sz: usize,
    ) -> sppark::Error;
    pub fn zkp_g1_points_new_bls12_381(
        out: *mut MsmHandle,
        points: *const c_void,
        n: usize,
        affine_sz: usize,
    ) -> sppark::Error;
    pub fn zkp_g1_points_drop_bls12_381(h: MsmHandle);
    pub fn zkp_g1_msm_bls12_381(
        h: MsmHandle,
        out: *mut c_void,
        scalars: *const c_void,
        n: usize,
    ) -> sppark::Error;
}
