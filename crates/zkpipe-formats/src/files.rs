//! Writing output files all-or-nothing: each goes to a temporary file beside its target
//! and is renamed into place only when every one of them was written.

use crate::error::{Error, ErrorKind};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes every `(path, bytes)` pair, or none of them: on any failure, files already
/// renamed into place by this call are removed again and temporaries are deleted.
pub fn write_all_or_nothing(outputs: &[(&Path, &[u8])]) -> Result<(), Error> {
    let mut staged = Vec::with_capacity(outputs.len());
    for (path, bytes) in outputs {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let io = |e| Error::new(path, ErrorKind::Io(e));
        let mut tmp = tempfile::Builder::new()
            .prefix(".zkpipe-")
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(io)?;
        tmp.write_all(bytes).map_err(io)?;
        // Temporary files are created private (0600); outputs get the usual 0644.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(io)?;
        }
        tmp.as_file().sync_all().map_err(io)?;
        staged.push((path, tmp));
    }
    let mut done: Vec<&Path> = Vec::new();
    for (path, tmp) in staged {
        if let Err(e) = tmp.persist(path) {
            for p in done {
                let _ = std::fs::remove_file(p);
            }
            return Err(Error::new(path, ErrorKind::Io(e.error)));
        }
        done.push(path);
    }
    Ok(())
}

/// Writes one file all-or-nothing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_all_or_nothing(&[(path, bytes)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_all_or_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let b = dir.path().join("b.json");
        write_all_or_nothing(&[(&a, b"1"), (&b, b"2")]).unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"2");

        let c = dir.path().join("c.json");
        let missing = dir.path().join("no-such-dir").join("d.json");
        assert!(write_all_or_nothing(&[(&c, b"1"), (&missing, b"2")]).is_err());
        assert!(!c.exists());
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 2, "only a.json and b.json remain");
    }
}
