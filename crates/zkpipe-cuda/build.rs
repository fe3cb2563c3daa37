//! Compiles the CUDA shims with nvcc, only with feature `cuda`.
//! Each curve is its own translation unit (`bn254.cu`, `bls12_381.cu`, each including
//! `msm.cuh`, `quotient.cuh` and `reduce.cuh`): sppark's Pippenger template instantiated
//! for two curves in one unit collides on its `sort` kernel. `host.cu` holds the
//! curve-independent runtime calls (devices, memory, pinned buffers).

/// Every file the shims are built from (`cuda/coop_probe.cu` is a standalone probe).
const SOURCES: [&str; 12] = [
    "cuda/bn254.cu",
    "cuda/bls12_381.cu",
    "cuda/host.cu",
    "cuda/common.cuh",
    "cuda/msm.cuh",
    "cuda/batch_msm.cuh",
    "cuda/batch_msm_kernels.cuh",
    "cuda/bits.cuh",
    "cuda/quotient.cuh",
    "cuda/reduce.cuh",
    "cuda/setup.cuh",
    "build.rs",
];

fn main() {
    for file in SOURCES {
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rerun-if-env-changed=NVCC");
    println!("cargo:rerun-if-env-changed=CUDA_LIB_DIR");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let sppark = std::env::var("DEP_SPPARK_ROOT").expect("sppark exports its include path");
    let blst = std::env::var("DEP_BLST_C_SRC").expect("blst exports its source path");
    // The units compile side by side (nvcc runs one thread per unit, and the two curves'
    // units take minutes each).
    let units = [
        ("cuda/bn254.cu", "zkpipe_cuda_bn254"),
        ("cuda/bls12_381.cu", "zkpipe_cuda_bls12_381"),
        ("cuda/host.cu", "zkpipe_cuda_host"),
    ];
    std::thread::scope(|s| {
        for (file, lib) in units {
            let (sppark, blst) = (&sppark, &blst);
            s.spawn(move || {
                let mut nvcc = cc::Build::new();
                nvcc.cuda(true)
                    .cudart("static")
                    // cc adds nvcc's `-G` (unoptimized device debug code) whenever the
                    // profile has any debug info; sppark's kernels hang when built that way.
                    .debug(false)
                    .opt_level(3)
                    .flag("-gencode")
                    .flag("arch=compute_90,code=sm_90")
                    .flag("-Xcompiler")
                    .flag("-Wno-unused-function")
                    .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None)
                    .include(sppark)
                    .include(blst)
                    .file(file);
                // blst's host code is built with ADX where the CPU has it; sppark's must agree.
                if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
                    nvcc.define("__ADX__", None);
                }
                nvcc.compile(lib);
            });
        }
    });
    if let Ok(dir) = std::env::var("CUDA_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
    }
}
