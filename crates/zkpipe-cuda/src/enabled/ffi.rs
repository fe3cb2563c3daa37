//! The C entry points of the CUDA shims (`cuda/*.cu`). The curve shims return sppark's
//! error struct by value; `host.cu` returns cudaError_t codes. No C++ exception crosses
//! into Rust. Each curve's entries are gathered in one [`CurveFns`] table.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

/// Opaque `zkp_set_t` (G1 or G2): points resident on a device and sppark's MSM state.
pub type SetHandle = *mut c_void;
/// Opaque `zkp_quotient_t` holding the NTT buffers of one domain size.
pub type QuotientHandle = *mut c_void;
/// Opaque `zkp_bm_plan_t`: the sorted bucket digits of a batch of scalar vectors.
pub type PlanHandle = *mut c_void;
/// Opaque `zkp_csr_t`: a key's A and B matrices resident on a device.
pub type MatricesHandle = *mut c_void;

/// The entry point that uploads A and B (host CSR arrays of `rows` rows each).
pub type CsrNewFn = unsafe extern "C" fn(
    out: *mut MatricesHandle,
    rows: u32,
    a_starts: *const u32,
    a_cols: *const u32,
    a_vals: *const c_void,
    b_starts: *const u32,
    b_cols: *const u32,
    b_vals: *const c_void,
    dev: c_int,
) -> sppark::Error;

/// The entry points of one group (G1 or G2) of one curve.
pub struct GroupFns {
    /// Uploads points (arkworks layout, `affine_sz` apart) after `pad` points at infinity,
    /// and builds their window table of width `table_wbits` there (0: none).
    pub new: unsafe extern "C" fn(
        out: *mut SetHandle,
        points: *const c_void,
        n: usize,
        affine_sz: usize,
        pad: usize,
        table_wbits: u32,
        dev: c_int,
    ) -> sppark::Error,
    pub drop: unsafe extern "C" fn(set: SetHandle),
    /// sppark's MSM of one scalar vector (host, or device with `on_device`).
    pub msm: unsafe extern "C" fn(
        set: SetHandle,
        out: *mut c_void,
        scalars: *const c_void,
        n: usize,
        mont: bool,
        on_device: bool,
    ) -> sppark::Error,
    /// A plan's k MSMs as bit sums: k·groups·wbits xyzz points into `out`.
    pub batch:
        unsafe extern "C" fn(set: SetHandle, plan: PlanHandle, out: *mut c_void) -> sppark::Error,
}

/// Every entry point of one curve.
pub struct CurveFns {
    pub g1: GroupFns,
    pub g2: GroupFns,
    pub g1_oneshot: unsafe extern "C" fn(
        out: *mut c_void,
        points: *const c_void,
        n: usize,
        scalars: *const c_void,
        affine_sz: usize,
    ) -> sppark::Error,
    pub plan_new: unsafe extern "C" fn(
        out: *mut PlanHandle,
        scalars: *const *const c_void,
        k: u32,
        n: u32,
        mont: bool,
        piece: u32,
        run: u32,
        order: bool,
        constant_work: bool,
        table_wbits: u32,
        shape: *mut u32,
        dev: c_int,
    ) -> sppark::Error,
    pub plan_drop: unsafe extern "C" fn(plan: PlanHandle),
    pub quotient_new: unsafe extern "C" fn(
        out: *mut QuotientHandle,
        lg_n: u32,
        powers: *const c_void,
        dev: c_int,
    ) -> sppark::Error,
    pub quotient_drop: unsafe extern "C" fn(q: QuotientHandle),
    pub quotient_run: unsafe extern "C" fn(
        q: QuotientHandle,
        a: *const c_void,
        b: *const c_void,
        c: *const c_void,
        h: *mut c_void,
        k: u64,
    ) -> sppark::Error,
    pub quotient_h: unsafe extern "C" fn(q: QuotientHandle) -> *const c_void,
    pub csr_new: CsrNewFn,
    pub csr_drop: unsafe extern "C" fn(m: MatricesHandle),
    /// a, b, c of a device witness (standard form, or Montgomery with `mont`) into the
    /// quotient's buffers.
    pub reduce_run: unsafe extern "C" fn(
        q: QuotientHandle,
        m: MatricesHandle,
        w: *const c_void,
        mont: bool,
    ) -> sppark::Error,
    /// Constant-work masking after the quotient: w += mw (nw values, w's form given by
    /// `mont`), and the h left on the device += mh.
    pub quotient_mask: unsafe extern "C" fn(
        q: QuotientHandle,
        w: *mut c_void,
        mw: *const c_void,
        nw: usize,
        mont: bool,
        mh: *const c_void,
    ) -> sppark::Error,
}

macro_rules! curve_fns {
    ($table:ident, $g1_new:ident, $g1_drop:ident, $g1_msm:ident, $g1_batch:ident,
     $g2_new:ident, $g2_drop:ident, $g2_msm:ident, $g2_batch:ident, $g1_oneshot:ident,
     $plan_new:ident, $plan_drop:ident, $q_new:ident, $q_drop:ident, $q_run:ident,
     $q_h:ident, $csr_new:ident, $csr_drop:ident, $reduce_run:ident, $q_mask:ident) => {
        extern "C" {
            fn $g1_new(
                o: *mut SetHandle,
                p: *const c_void,
                n: usize,
                sz: usize,
                pad: usize,
                table_wbits: u32,
                dev: c_int,
            ) -> sppark::Error;
            fn $g1_drop(set: SetHandle);
            fn $g1_msm(
                set: SetHandle,
                out: *mut c_void,
                s: *const c_void,
                n: usize,
                mont: bool,
                on_device: bool,
            ) -> sppark::Error;
            fn $g1_batch(set: SetHandle, plan: PlanHandle, out: *mut c_void) -> sppark::Error;
            fn $g2_new(
                o: *mut SetHandle,
                p: *const c_void,
                n: usize,
                sz: usize,
                pad: usize,
                table_wbits: u32,
                dev: c_int,
            ) -> sppark::Error;
            fn $g2_drop(set: SetHandle);
            fn $g2_msm(
                set: SetHandle,
                out: *mut c_void,
                s: *const c_void,
                n: usize,
                mont: bool,
                on_device: bool,
            ) -> sppark::Error;
            fn $g2_batch(set: SetHandle, plan: PlanHandle, out: *mut c_void) -> sppark::Error;
            fn $g1_oneshot(
                out: *mut c_void,
                p: *const c_void,
                n: usize,
                s: *const c_void,
                sz: usize,
            ) -> sppark::Error;
            fn $plan_new(
                out: *mut PlanHandle,
                s: *const *const c_void,
                k: u32,
                n: u32,
                mont: bool,
                piece: u32,
                run: u32,
                order: bool,
                constant_work: bool,
                table_wbits: u32,
                shape: *mut u32,
                dev: c_int,
            ) -> sppark::Error;
            fn $plan_drop(plan: PlanHandle);
            fn $q_new(
                out: *mut QuotientHandle,
                lg_n: u32,
                powers: *const c_void,
                dev: c_int,
            ) -> sppark::Error;
            fn $q_drop(q: QuotientHandle);
            fn $q_run(
                q: QuotientHandle,
                a: *const c_void,
                b: *const c_void,
                c: *const c_void,
                h: *mut c_void,
                k: u64,
            ) -> sppark::Error;
            fn $q_h(q: QuotientHandle) -> *const c_void;
            fn $csr_new(
                out: *mut MatricesHandle,
                rows: u32,
                a_starts: *const u32,
                a_cols: *const u32,
                a_vals: *const c_void,
                b_starts: *const u32,
                b_cols: *const u32,
                b_vals: *const c_void,
                dev: c_int,
            ) -> sppark::Error;
            fn $csr_drop(m: MatricesHandle);
            fn $reduce_run(
                q: QuotientHandle,
                m: MatricesHandle,
                w: *const c_void,
                mont: bool,
            ) -> sppark::Error;
            fn $q_mask(
                q: QuotientHandle,
                w: *mut c_void,
                mw: *const c_void,
                nw: usize,
                mont: bool,
                mh: *const c_void,
            ) -> sppark::Error;
        }
        pub static $table: CurveFns = CurveFns {
            g1: GroupFns {
                new: $g1_new,
                drop: $g1_drop,
                msm: $g1_msm,
                batch: $g1_batch,
            },
            g2: GroupFns {
                new: $g2_new,
                drop: $g2_drop,
                msm: $g2_msm,
                batch: $g2_batch,
            },
            g1_oneshot: $g1_oneshot,
            plan_new: $plan_new,
            plan_drop: $plan_drop,
            quotient_new: $q_new,
            quotient_drop: $q_drop,
            quotient_run: $q_run,
            quotient_h: $q_h,
            csr_new: $csr_new,
            csr_drop: $csr_drop,
            reduce_run: $reduce_run,
            quotient_mask: $q_mask,
        };
    };
}

curve_fns!(
    BN254,
    zkp_g1_points_new_bn254,
    zkp_g1_points_drop_bn254,
    zkp_g1_msm_bn254,
    zkp_g1_batch_msm_bn254,
    zkp_g2_points_new_bn254,
    zkp_g2_points_drop_bn254,
    zkp_g2_msm_bn254,
    zkp_g2_batch_msm_bn254,
    zkp_g1_msm_oneshot_bn254,
    zkp_bm_plan_new_bn254,
    zkp_bm_plan_drop_bn254,
    zkp_quotient_new_bn254,
    zkp_quotient_drop_bn254,
    zkp_quotient_run_bn254,
    zkp_quotient_h_bn254,
    zkp_csr_new_bn254,
    zkp_csr_drop_bn254,
    zkp_reduce_run_bn254,
    zkp_quotient_mask_bn254
);
curve_fns!(
    BLS12_381,
    zkp_g1_points_new_bls12_381,
    zkp_g1_points_drop_bls12_381,
    zkp_g1_msm_bls12_381,
    zkp_g1_batch_msm_bls12_381,
    zkp_g2_points_new_bls12_381,
    zkp_g2_points_drop_bls12_381,
    zkp_g2_msm_bls12_381,
    zkp_g2_batch_msm_bls12_381,
    zkp_g1_msm_oneshot_bls12_381,
    zkp_bm_plan_new_bls12_381,
    zkp_bm_plan_drop_bls12_381,
    zkp_quotient_new_bls12_381,
    zkp_quotient_drop_bls12_381,
    zkp_quotient_run_bls12_381,
    zkp_quotient_h_bls12_381,
    zkp_csr_new_bls12_381,
    zkp_csr_drop_bls12_381,
    zkp_reduce_run_bls12_381,
    zkp_quotient_mask_bls12_381
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
    pub fn zkp_pinned_free(p: *mut c_void);
}

// The CUDA runtime itself (statically linked with the shims): calls whose flags the shims
// do not expose, declared here instead of growing host.cu (which would rebuild every
// curve's kernels).
extern "C" {
    pub fn cudaHostAlloc(out: *mut *mut c_void, bytes: usize, flags: u32) -> c_int;
    pub fn cudaMemcpy(dst: *mut c_void, src: *const c_void, bytes: usize, kind: c_int) -> c_int;
}
