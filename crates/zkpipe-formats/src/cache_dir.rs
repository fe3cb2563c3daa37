//! Where zkpipe keeps what it remembers between processes for this user (compiled witness
//! modules, keys whose points passed their checks): `$<ENV>` if set (`off` or empty turns
//! that cache off), else `$XDG_CACHE_HOME/zkpipe/<name>`, else `~/.cache/zkpipe/<name>`.

use std::path::{Path, PathBuf};

/// The directory of the cache `name`, overridden by the environment variable `env`; `None`
/// when that says `off` (or is empty) or no home for it is known.
pub fn user_cache_dir(env: &str, name: &str) -> Option<PathBuf> {
    match std::env::var_os(env) {
        Some(v) if v == "off" || v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .map(|c| c.join("zkpipe").join(name)),
    }
}

/// Creates `dir` (and its parents) readable by this user only (0700 on Unix).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}
