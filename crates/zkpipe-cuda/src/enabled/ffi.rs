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

/// `zkp_rows_t` (reduce.cuh): one matrix's rows of a streamed chunk on the device, its
/// row offsets and its entries from offset `base` on, their columns and values, or with
/// `words` not null narrow words whose full values are `vals[index − full_base]`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ChunkRows {
    pub starts: *const u32,
    pub cols: *const u32,
    pub vals: *const c_void,
    pub words: *const u32,
    pub base: u32,
    pub full_base: u32,
}

/// Declares every curve entry point once: its field in [`CurveFns`] (or [`GroupFns`], for
/// the entries each group G1 and G2 has) and, for each curve table, the extern symbol it is
/// bound to, `zkp_<entry>_<curve>` (group entries: `zkp_g1_<entry>_<curve>`,
/// `zkp_g2_<entry>_<curve>`), as the shims in `cuda/` export them.
macro_rules! curve_ffi {
    (groups $groups:tt curve $curve:tt tables { $($table:ident = $suffix:literal),* $(,)? }) => {
        curve_ffi!(@types $groups $curve);
        $( curve_ffi!(@table $table $suffix $groups $curve); )*
    };
    (@types
        { $( $(#[$gdoc:meta])* $gfield:ident = $gsym:literal fn($($garg:ident: $gty:ty),* $(,)?) $(-> $gret:ty)?; )* }
        { $( $(#[$cdoc:meta])* $cfield:ident = $csym:literal fn($($carg:ident: $cty:ty),* $(,)?) $(-> $cret:ty)?; )* }
    ) => {
        /// The entry points of one group (G1 or G2) of one curve.
        pub struct GroupFns {
            $( $(#[$gdoc])* pub $gfield: unsafe extern "C" fn($($garg: $gty),*) $(-> $gret)?, )*
        }
        /// Every entry point of one curve.
        pub struct CurveFns {
            /// G1's entries.
            pub g1: GroupFns,
            /// G2's entries.
            pub g2: GroupFns,
            $( $(#[$cdoc])* pub $cfield: unsafe extern "C" fn($($carg: $cty),*) $(-> $cret)?, )*
        }
    };
    (@table $table:ident $suffix:literal
        { $( $(#[$gdoc:meta])* $gfield:ident = $gsym:literal fn($($garg:ident: $gty:ty),* $(,)?) $(-> $gret:ty)?; )* }
        { $( $(#[$cdoc:meta])* $cfield:ident = $csym:literal fn($($carg:ident: $cty:ty),* $(,)?) $(-> $cret:ty)?; )* }
    ) => {
        #[doc = concat!("The ", $suffix, " shims' entry points.")]
        pub static $table: CurveFns = CurveFns {
            g1: {
                extern "C" {
                    $( #[link_name = concat!("zkp_g1_", $gsym, "_", $suffix)]
                       fn $gfield($($garg: $gty),*) $(-> $gret)?; )*
                }
                GroupFns { $( $gfield, )* }
            },
            g2: {
                extern "C" {
                    $( #[link_name = concat!("zkp_g2_", $gsym, "_", $suffix)]
                       fn $gfield($($garg: $gty),*) $(-> $gret)?; )*
                }
                GroupFns { $( $gfield, )* }
            },
            $( $cfield: {
                extern "C" {
                    #[link_name = concat!("zkp_", $csym, "_", $suffix)]
                    fn $cfield($($carg: $cty),*) $(-> $cret)?;
                }
                $cfield
            }, )*
        };
    };
}

curve_ffi! {
    groups {
        /// Uploads points (arkworks layout, `affine_sz` apart) after `pad` points at
        /// infinity, and builds their window table of width `table_wbits` there (0: none).
        new = "points_new" fn(
            out: *mut SetHandle,
            points: *const c_void,
            n: usize,
            affine_sz: usize,
            pad: usize,
            table_wbits: u32,
            dev: c_int,
        ) -> sppark::Error;
        /// A chunk set: room for `cap` points in `room` (borrowed device memory, which
        /// the caller refills), and sppark's MSM state sized for them.
        chunk_new = "chunk_new" fn(
            out: *mut SetHandle,
            cap: usize,
            affine_sz: usize,
            room: *mut c_void,
            dev: c_int,
        ) -> sppark::Error;
        /// Frees a point set.
        drop = "points_drop" fn(set: SetHandle);
        /// sppark's MSM of one scalar vector (host, or device with `on_device`).
        msm = "msm" fn(
            set: SetHandle,
            out: *mut c_void,
            scalars: *const c_void,
            n: usize,
            mont: bool,
            on_device: bool,
        ) -> sppark::Error;
        /// A plan's k MSMs as bit sums: k·groups·wbits xyzz points into `out`.
        batch = "batch_msm" fn(set: SetHandle, plan: PlanHandle, out: *mut c_void) -> sppark::Error;
        /// The bit path's sum (`bits.cuh`): Σ of the set's points `first..first + n`
        /// whose bit `bit0 + (i − first)` of the device bitmap `ones` is set, as
        /// `ZKP_BITS_OUT` xyzz partial sums into host `out`.
        bits_sum = "bits_sum" fn(
            set: SetHandle,
            first: usize,
            n: usize,
            ones: *const u32,
            bit0: usize,
            out: *mut c_void,
        ) -> sppark::Error;
        /// out[i] = scalars[i]·G for i < n from a window table of G, affine in the key
        /// file's layout, through `xyzz` (room for n xyzz points; `setup.cuh`), all in
        /// device memory on `dev`; returns when they are there.
        fixed_base = "fixed_base" fn(
            out: *mut c_void,
            xyzz: *mut c_void,
            scalars: *const c_void,
            table: *const c_void,
            n: usize,
            dev: c_int,
        ) -> sppark::Error;
    }
    curve {
        /// One-shot G1 MSM (points uploaded with the scalars, sppark's own entry point):
        /// the reference the resident path is checked against.
        g1_oneshot = "g1_msm_oneshot" fn(
            out: *mut c_void,
            points: *const c_void,
            n: usize,
            scalars: *const c_void,
            affine_sz: usize,
        ) -> sppark::Error;
        /// A batch plan for k scalar vectors of n scalars each, in device memory (`scalars`:
        /// a host array of k device pointers); `shape` receives the window width and the
        /// bucket groups.
        plan_new = "bm_plan_new" fn(
            out: *mut PlanHandle,
            scalars: *const *const c_void,
            k: u32,
            n: u32,
            mont: bool,
            piece: u32,
            run: u32,
            gap: u32,
            order: bool,
            constant_work: bool,
            table_wbits: u32,
            shape: *mut u32,
            dev: c_int,
        ) -> sppark::Error;
        /// Frees a plan.
        plan_drop = "bm_plan_drop" fn(plan: PlanHandle);
        /// The bit path's split (`bits.cuh`) of n device scalars (`one`: 1 in their
        /// form, 4 words): the bitmap of 1s into device `ones` (`words` words), into host
        /// memory the count of the other non-zero values and, if at most `cap`, their
        /// indices and standard-form values.
        bits_split = "bits_split" fn(
            w: *const c_void,
            n: usize,
            mont: bool,
            one: *const u64,
            ones: *mut u32,
            words: usize,
            cap: u32,
            count: *mut u32,
            idx: *mut u32,
            vals: *mut c_void,
            dev: c_int,
        ) -> sppark::Error;
        /// The NTT buffers of one domain size, with the coset's powers.
        quotient_new = "quotient_new" fn(
            out: *mut QuotientHandle,
            lg_n: u32,
            powers: *const c_void,
            dev: c_int,
        ) -> sppark::Error;
        /// Frees a quotient's buffers.
        quotient_drop = "quotient_drop" fn(q: QuotientHandle);
        /// h = a·b − c on snarkjs's coset from a, b, c (host, or all three null when
        /// `reduce_run` left them in the quotient's buffers); `h` null leaves h on the
        /// device only.
        quotient_run = "quotient_run" fn(
            q: QuotientHandle,
            a: *const c_void,
            b: *const c_void,
            c: *const c_void,
            h: *mut c_void,
            k: u64,
        ) -> sppark::Error;
        /// The device buffer holding h after `quotient_run`.
        quotient_h = "quotient_h" fn(q: QuotientHandle) -> *const c_void;
        /// Uploads A and B (host CSR arrays of `rows` rows each).
        csr_new = "csr_new" fn(
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
        /// Frees a key's matrices on the device.
        csr_drop = "csr_drop" fn(m: MatricesHandle);
        /// a, b, c of a device witness (standard form, or Montgomery with `mont`) into the
        /// quotient's buffers.
        reduce_run = "reduce_run" fn(
            q: QuotientHandle,
            m: MatricesHandle,
            w: *const c_void,
            mont: bool,
        ) -> sppark::Error;
        /// One proof's quotient from its witness in one call: `bytes` of w from the host
        /// to `w_dev` on the quotient's stream, then the reduce (w standard, or
        /// Montgomery with `mont`) and the quotient, h left on the device; with `graph`
        /// as the set's captured CUDA graph. `quotient_ms` receives the quotient's GPU
        /// time (−1 if unknown).
        reduce_quotient = "reduce_quotient" fn(
            q: QuotientHandle,
            m: MatricesHandle,
            w_dev: *mut c_void,
            w_host: *const c_void,
            bytes: usize,
            mont: bool,
            k: u64,
            graph: bool,
            quotient_ms: *mut f32,
        ) -> sppark::Error;
        /// a, b, c of rows `row0..row0 + rows` of a device witness into the quotient's
        /// buffers, from those rows of A and B on the device (a streamed key's chunk):
        /// each matrix's rows + 1 offsets, its entries' columns and values (or narrow
        /// words) from offset `base` on, and the chunk's long rows.
        reduce_rows = "reduce_rows" fn(
            q: QuotientHandle,
            row0: u32,
            rows: u32,
            a: ChunkRows,
            b: ChunkRows,
            long_rows: *const u32,
            n_long: u32,
            w: *const c_void,
            mont: bool,
        ) -> sppark::Error;
        /// Constant-work masking after the quotient: w += mw (nw values, w's form given by
        /// `mont`), and the h left on the device += mh.
        quotient_mask = "quotient_mask" fn(
            q: QuotientHandle,
            w: *mut c_void,
            mw: *const c_void,
            nw: usize,
            mont: bool,
            mh: *const c_void,
        ) -> sppark::Error;
    }
    tables {
        BN254 = "bn254",
        BLS12_381 = "bls12_381",
    }
}

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
    pub fn cudaSetDevice(dev: c_int) -> c_int;
    pub fn cudaSetDeviceFlags(flags: u32) -> c_int;
    pub fn cudaGetDeviceFlags(flags: *mut u32) -> c_int;
}
