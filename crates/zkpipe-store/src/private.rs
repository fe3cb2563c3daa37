//! Directories and files only their owner can read: what the stores write holds private
//! witnesses. Modes are set explicitly after creation (the umask only narrows what a
//! creation asks for, and a permissive one must not widen anything), and an existing
//! directory or file is narrowed when a store opens it.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of every directory a store creates.
pub(crate) const DIR_MODE: u32 = 0o700;
/// The mode of every file a store writes.
pub(crate) const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and missing parents) as 0700, or makes an existing one 0700.
pub(crate) fn dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
}

/// Creates `path`, which must not exist, as a 0600 file open for writing.
pub(crate) fn new_file(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)?;
    f.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(f)
}

/// Makes `path` 0600 if it exists; with `create`, creates it empty (as 0600) if not.
pub(crate) fn file(path: &Path, create: bool) -> io::Result<()> {
    if create {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(FILE_MODE)
            .open(path)?;
    }
    match std::fs::set_permissions(path, Permissions::from_mode(FILE_MODE)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && !create => Ok(()),
        r => r,
    }
}
