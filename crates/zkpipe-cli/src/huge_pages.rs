//! Transparent huge pages for glibc's large allocations, in the commands that move
//! witnesses (`serve`, `submit`, the lab's `loadtest`, `sweep`). A 2^20-signal witness is 32 MB;
//! receiving or sending one costs mostly first-touch page faults on fresh buffers, which
//! glibc maps with 4 KiB pages. Its `glibc.malloc.hugetlb=1` tunable asks for huge pages there
//! (lab/experiments/011-reduce-on-gpu.md: 4 GPU clients' uploads then stop leaving the GPU idle).
//! Tunables are read only at process start, so the process re-executes itself with the setting.
//!
//! `ZKPIPE_HUGE_PAGES` is the switch: `1` (the default, also when unset) or `0` (leave
//! the tunable alone: glibc's default 4 KiB pages). It only tunes glibc's malloc: with
//! `ZKPIPE_ALLOCATOR=mimalloc` the tunable changes nothing.

/// The environment variable.
pub const VAR: &str = "ZKPIPE_HUGE_PAGES";

/// Whether `ZKPIPE_HUGE_PAGES` asks for huge pages (unset or empty: yes), or the
/// one-line error for a value other than 0 or 1.
pub fn wanted() -> Result<bool, String> {
    let Some(value) = std::env::var_os(VAR) else {
        return Ok(true);
    };
    match value.to_str() {
        Some("" | "1") => Ok(true),
        Some("0") => Ok(false),
        _ => Err(format!("{VAR}: unknown value {value:?} (0 or 1)")),
    }
}

/// With `wanted` ([`wanted`]), re-executes this process with
/// `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` unless `GLIBC_TUNABLES` is already set (to
/// anything, even empty: it is left as it is). Returns only where it does not re-execute
/// (not wanted, set already, not glibc, or exec failed).
pub fn ensure(wanted: bool) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if !wanted || std::env::var_os("GLIBC_TUNABLES").is_some() {
            return;
        }
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut args = std::env::args_os();
        let mut cmd = std::process::Command::new(exe);
        if let Some(arg0) = args.next() {
            cmd.arg0(arg0);
        }
        let err = cmd
            .args(args)
            .env("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
            .exec();
        // exec returns only on failure: go on with the default allocator settings.
        eprintln!("zkpipe: note: not using huge pages for large buffers ({err})");
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = wanted;
}
