//! Transparent huge pages for glibc's large allocations, in the commands that move
//! witnesses (`serve`, `submit`, `loadtest`, `sweep`). A 2^20-signal witness is 32 MB;
//! receiving or sending one costs mostly first-touch page faults on fresh buffers, which
//! glibc maps with 4 KiB pages. Its `glibc.malloc.hugetlb=1` tunable asks for huge pages there
//! (experiment 011: 4 GPU clients' uploads then stop leaving the GPU idle). Tunables are
//! read only at process start, so the process re-executes itself with the setting.

/// Re-executes this process with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` unless
/// `GLIBC_TUNABLES` is already set (to anything, even empty: that is the opt-out). Returns
/// only where it does not re-execute (set already, not glibc, or exec failed).
pub fn ensure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os("GLIBC_TUNABLES").is_some() {
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
}
