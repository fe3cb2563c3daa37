//! Pinned staging, per kind and direction (issue 16): portable vs write-combined host
//! memory for the witness upload (CPU writes, then host → device) and for results back
//! (device → host, then CPU reads). Each copy is also checked byte for byte.

use super::super::common::Cfg;
use std::time::Instant;
use zkpipe_cuda::{DeviceBuf, PinnedBuf, PinnedKind};

/// Median milliseconds of `runs` calls of `f` after one warm-up.
fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut v: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times both kinds at 2 MiB and 128 MiB (the witness of a 2^22 key); false if a copy
/// came back wrong.
pub fn check_pinned(cfg: &Cfg) -> bool {
    let mut ok = true;
    println!(
        "pinned staging (median of {} runs): kind, size, CPU write, H→D, D→H, CPU read",
        cfg.runs
    );
    for bytes in [2usize << 20, 128 << 20] {
        let src: Vec<u64> = (0..bytes / 8).map(|i| i as u64 * 0x9e37_79b9).collect();
        let mut back = vec![0u64; src.len()];
        let mut dev = DeviceBuf::new(0, bytes).expect("device buffer");
        for kind in [PinnedKind::Portable, PinnedKind::WriteCombined] {
            let mut pinned = PinnedBuf::with_kind(bytes, kind).expect("pinned buffer");
            let write = median_ms(cfg.runs, || {
                pinned.stage(0, &src);
            });
            let p = pinned.ptr_at(0) as *const u8;
            // SAFETY: `p` holds `bytes` staged bytes; the device buffer is `bytes` long.
            let h2d = median_ms(cfg.runs, || unsafe {
                dev.upload_raw(p, bytes).expect("upload")
            });
            let d = dev.device_ptr(0);
            // SAFETY: `d` is this device's buffer of `bytes` bytes.
            let d2h = median_ms(cfg.runs, || unsafe {
                pinned.download_raw(0, d, bytes).expect("download")
            });
            let read = median_ms(cfg.runs, || pinned.unstage(0, &mut back));
            let same = back == src;
            ok &= same;
            let gbs = |ms: f64| bytes as f64 / ms / 1e6;
            println!(
                "  {kind:?} {:>4} MiB: write {write:.3} ms, H→D {h2d:.3} ms ({:.1} GB/s), D→H {d2h:.3} ms ({:.1} GB/s), read {read:.3} ms  {}",
                bytes >> 20,
                gbs(h2d),
                gbs(d2h),
                if same { "ok" } else { "MISMATCH" }
            );
        }
    }
    ok
}
