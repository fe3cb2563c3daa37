//! Reading inputs and writing outputs so that nothing is lost and nothing clobbered.
//!
//! Outputs are planned before the work and written after it:
//!
//! ```text
//!  Plan::new(outputs, inputs, existing)   before the work: every check that can fail early
//!      │   `-` → stdout; device, FIFO, socket → written in place; directory → error;
//!      │   symlink → the file it points to; clash with an input or another output → error
//!      ▼
//!  plan.write(contents)                   after the work
//!      1. stage   each regular file into a temporary beside its target
//!      2. commit  rename each over its target, keeping a hard-link backup of what it replaced
//!      3. stream  in-place outputs, then stdout
//!      4. on any failure: put the backups back, remove new files and temporaries
//! ```
//!
//! Messages name the output as the user gave it, never a temporary file. Temporaries and
//! backups are `.NAME.zkpipe-PID-N.tmp` / `.bak` beside the file; only a process killed
//! between steps leaves one behind.

use crate::error::{Error, ErrorKind};
use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Opens an input file for reading; a directory is [`ErrorKind::IsDirectory`] (the OS
/// would say "No such device" when it is mapped, or fail only at the first read).
pub fn open_input(path: &Path) -> Result<File, Error> {
    let io = |e| Error::new(path, ErrorKind::Io(e));
    let file = File::open(path).map_err(io)?;
    if file.metadata().map_err(io)?.is_dir() {
        return Err(Error::new(path, ErrorKind::IsDirectory));
    }
    Ok(file)
}

/// Reads a whole input file; a directory or an empty file is an error of its own kind.
pub fn read_input(path: &Path) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    open_input(path)?
        .read_to_end(&mut bytes)
        .map_err(|e| Error::new(path, ErrorKind::Io(e)))?;
    if bytes.is_empty() {
        return Err(Error::new(path, ErrorKind::Empty));
    }
    Ok(bytes)
}

/// The name `-` gives an input read from stdin in messages.
pub const STDIN_NAME: &str = "<stdin>";

/// Reads a whole input, `-` being stdin (named [`STDIN_NAME`] in errors); an empty input
/// is an error, as in [`read_input`].
pub fn read_input_or_stdin(path: &Path) -> Result<Vec<u8>, Error> {
    if path != Path::new("-") {
        return read_input(path);
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut bytes)
        .map_err(|e| Error::new(STDIN_NAME, ErrorKind::Io(e)))?;
    if bytes.is_empty() {
        return Err(Error::new(STDIN_NAME, ErrorKind::Empty));
    }
    Ok(bytes)
}

/// What to do with an output that already exists as a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Replace it (snarkjs's habit for proofs, public signals and verification keys).
    Replace,
    /// Refuse before the work, with [`ErrorKind::AlreadyExists`] (keys and circuits, which
    /// take long to make; commands offer `--force` to choose `Replace`).
    Refuse,
}

/// Outputs checked before the work, ready to be written after it. See the module doc.
#[derive(Debug)]
pub struct Plan {
    outputs: Vec<Output>,
}

#[derive(Debug)]
struct Output {
    /// The path as the user gave it, for messages.
    shown: PathBuf,
    target: Target,
}

#[derive(Debug)]
enum Target {
    /// `-`.
    Stdout,
    /// An existing character device, FIFO or socket: opened and written, never renamed over.
    InPlace,
    /// A regular file, existing or new: `path` is where it really lives (symlinks followed),
    /// and its temporary goes beside it.
    File { path: PathBuf },
}

/// What makes two paths the same file. Character devices (`/dev/null`, a terminal) have
/// none: writing twice to one of them loses nothing.
#[derive(Debug, PartialEq, Eq)]
enum FileId {
    /// An existing file.
    Inode { dev: u64, ino: u64 },
    /// A file not yet created: its canonical directory and its name.
    Name(PathBuf),
}

impl Plan {
    /// Checks `outputs` before any work is done, in this order for each:
    /// `-` is stdout (twice is an error); an existing directory is an error; an existing
    /// regular file is replaced or refused as `existing` says; an existing device, FIFO or
    /// socket will be written in place; a new file needs an existing directory. Symlinks
    /// are followed. Then no output may be the same file as an input or another output
    /// (same device and inode, or same directory and name for files not yet created).
    pub fn new(outputs: &[&Path], inputs: &[&Path], existing: Existing) -> Result<Self, Error> {
        let mut planned = Vec::with_capacity(outputs.len());
        let mut ids = Vec::with_capacity(outputs.len());
        let mut stdout = false;
        for &path in outputs {
            let (target, id) = plan_one(path, existing)?;
            if matches!(target, Target::Stdout) {
                if stdout {
                    return Err(Error::new(path, ErrorKind::StdoutTwice));
                }
                stdout = true;
            }
            planned.push(Output {
                shown: path.to_path_buf(),
                target,
            });
            ids.push(id);
        }
        for (i, id) in ids.iter().enumerate() {
            let Some(id) = id else { continue };
            let clash = |other: &Path, role| {
                Error::new(
                    outputs[i],
                    ErrorKind::SameFile {
                        other: other.to_path_buf(),
                        role,
                    },
                )
            };
            for &input in inputs {
                if input_id(input).as_ref() == Some(id) {
                    return Err(clash(input, "input"));
                }
            }
            if let Some(j) = (0..i).find(|&j| ids[j].as_ref() == Some(id)) {
                return Err(clash(outputs[j], "output"));
            }
        }
        Ok(Self { outputs: planned })
    }

    /// Whether one of the outputs is stdout (so a command prints its report to stderr).
    pub fn writes_stdout(&self) -> bool {
        self.outputs
            .iter()
            .any(|o| matches!(o.target, Target::Stdout))
    }

    /// Writes `contents[i]` to the i-th output, all or nothing as far as files go: if any
    /// step fails, every file that existed is put back as it was and new ones are removed.
    /// (What already went into a FIFO or stdout cannot be taken back; those are written
    /// last, after every regular file is in place.)
    pub fn write(self, contents: &[&[u8]]) -> Result<(), Error> {
        let parts: Vec<&[&[u8]]> = contents.iter().map(std::slice::from_ref).collect();
        self.write_parts(&parts)
    }

    /// [`Self::write`] with each output's contents given as slices written one after
    /// another: a file of many GB (a large key) without gathering it in one buffer.
    pub fn write_parts(self, contents: &[&[&[u8]]]) -> Result<(), Error> {
        if contents.len() != self.outputs.len() {
            let msg = format!(
                "{} contents for {} outputs",
                contents.len(),
                self.outputs.len()
            );
            let path = self.outputs.first().map_or(Path::new("-"), |o| &o.shown);
            let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, msg);
            return Err(Error::new(path, ErrorKind::Io(e)));
        }
        let pairs: Vec<(&Output, &[&[u8]])> =
            self.outputs.iter().zip(contents.iter().copied()).collect();

        // 1. Stage every regular file; a failure here has touched nothing.
        let mut staged = Vec::new();
        for (out, bytes) in &pairs {
            if let Target::File { path } = &out.target {
                staged.push(Staged::write(out, path, bytes)?);
            }
        }
        // 2. Commit them; undo on failure.
        let mut commit = Commit::default();
        for s in staged {
            commit.replace(s)?;
        }
        // 3. Stream the rest: in place first, stdout last.
        let streams = pairs
            .iter()
            .filter(|(o, _)| matches!(o.target, Target::InPlace))
            .chain(
                pairs
                    .iter()
                    .filter(|(o, _)| matches!(o.target, Target::Stdout)),
            );
        for (out, bytes) in streams {
            stream(out, bytes).map_err(|e| Error::new(&out.shown, ErrorKind::Io(e)))?;
        }
        commit.finish();
        Ok(())
    }
}

/// Where one output goes and what identifies it.
fn plan_one(path: &Path, existing: Existing) -> Result<(Target, Option<FileId>), Error> {
    let io = |e| Error::new(path, ErrorKind::Io(e));
    if path == Path::new("-") {
        return Ok((Target::Stdout, stdout_id()));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(Error::new(path, ErrorKind::IsDirectory)),
        Ok(m) if m.is_file() => {
            if existing == Existing::Refuse {
                return Err(Error::new(path, ErrorKind::AlreadyExists));
            }
            let target = follow_links(path).map_err(io)?;
            Ok((Target::File { path: target }, file_id(&m)))
        }
        // A device, FIFO or socket (`/dev/stdout` is a link to one of these, or a file).
        Ok(m) => Ok((Target::InPlace, file_id(&m))),
        Err(e) => {
            // A new file (possibly through a dangling link): its directory must exist.
            let target = follow_links(path).map_err(io)?;
            let dir = parent(&target);
            match std::fs::metadata(dir) {
                Ok(d) if d.is_dir() => {}
                Ok(_) => return Err(Error::new(path, ErrorKind::NotADirectory(dir.into()))),
                Err(_) => return Err(Error::new(path, ErrorKind::NoDirectory(dir.into()))),
            }
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(io(e));
            }
            let name = target.file_name().ok_or_else(|| {
                io(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a file name",
                ))
            })?;
            let dir = std::fs::canonicalize(dir).map_err(io)?;
            Ok((
                Target::File {
                    path: target.clone(),
                },
                Some(FileId::Name(dir.join(name))),
            ))
        }
    }
}

/// What identifies an input: the file it is, or the name it would have.
fn input_id(path: &Path) -> Option<FileId> {
    match std::fs::metadata(path) {
        Ok(m) => file_id(&m),
        Err(_) => {
            let target = follow_links(path).ok()?;
            let dir = std::fs::canonicalize(parent(&target)).ok()?;
            Some(FileId::Name(dir.join(target.file_name()?)))
        }
    }
}

/// What identifies whatever stdout is connected to (a redirect to a file that is also
/// another output would lose one of them).
fn stdout_id() -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let fd = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
        file_id(&File::from(fd).metadata().ok()?)
    }
    #[cfg(not(unix))]
    None
}

#[cfg(unix)]
fn file_id(m: &Metadata) -> Option<FileId> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if m.file_type().is_char_device() {
        return None;
    }
    Some(FileId::Inode {
        dev: m.dev(),
        ino: m.ino(),
    })
}

#[cfg(not(unix))]
fn file_id(_: &Metadata) -> Option<FileId> {
    None
}

/// The directory a path is in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Follows symlinks (dangling ones too) to the path of the file itself, so that a
/// temporary goes beside the file and the rename replaces the file, not the link.
fn follow_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // The same limit as Linux's for nested links.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = parent(&p).join(to);
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// A name beside `target` for a temporary or backup: `.NAME.zkpipe-PID-N.EXT`.
fn sibling(target: &Path, ext: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    parent(target).join(format!(".{name}.zkpipe-{}-{n}.{ext}", std::process::id()))
}

/// Creates a new file beside `target` under a fresh sibling name.
fn create_sibling(target: &Path, ext: &str) -> std::io::Result<(PathBuf, File)> {
    loop {
        let p = sibling(target, ext);
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A file removed when dropped, unless it was kept.
struct Removed {
    path: PathBuf,
    armed: bool,
}

impl Removed {
    fn new(path: PathBuf) -> Self {
        Self { path, armed: true }
    }

    fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for Removed {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A regular output written to its temporary, not yet in place.
struct Staged<'a> {
    shown: &'a Path,
    target: &'a Path,
    temp: Removed,
}

impl<'a> Staged<'a> {
    fn write(out: &'a Output, target: &'a Path, parts: &[&[u8]]) -> Result<Self, Error> {
        let io = |e| Error::new(&out.shown, ErrorKind::Io(e));
        let (temp, mut file) = create_sibling(target, "tmp").map_err(io)?;
        let temp = Removed::new(temp);
        for part in parts {
            file.write_all(part).map_err(io)?;
        }
        // A replaced file keeps its permissions; a new one gets the umask's (as with `>`).
        if let Ok(m) = std::fs::metadata(target) {
            file.set_permissions(m.permissions()).map_err(io)?;
        }
        file.sync_all().map_err(io)?;
        Ok(Self {
            shown: &out.shown,
            target,
            temp,
        })
    }
}

/// Files renamed into place so far, with a backup of each file they replaced.
#[derive(Default)]
struct Commit {
    done: Vec<(PathBuf, Option<PathBuf>)>,
}

impl Commit {
    /// Renames a staged file over its target; on failure undoes everything so far.
    fn replace(&mut self, s: Staged) -> Result<(), Error> {
        let result = self.try_replace(&s);
        if let Err(e) = result {
            self.undo();
            return Err(Error::new(s.shown, ErrorKind::Io(e)));
        }
        s.temp.keep();
        Ok(())
    }

    fn try_replace(&mut self, s: &Staged) -> std::io::Result<()> {
        let backup = match std::fs::symlink_metadata(s.target) {
            Ok(m) if m.is_file() => Some(backup(s.target)?),
            _ => None,
        };
        if let Err(e) = std::fs::rename(&s.temp.path, s.target) {
            if let Some(b) = backup {
                let _ = std::fs::remove_file(b);
            }
            return Err(e);
        }
        self.done.push((s.target.to_path_buf(), backup));
        Ok(())
    }

    /// Puts back what was replaced and removes what was new, newest first.
    fn undo(&mut self) {
        for (target, backup) in self.done.drain(..).rev() {
            let _ = match backup {
                Some(b) => std::fs::rename(b, &target),
                None => std::fs::remove_file(&target),
            };
        }
    }

    /// Every output is written: the backups go.
    fn finish(mut self) {
        for (_, backup) in self.done.drain(..) {
            if let Some(b) = backup {
                let _ = std::fs::remove_file(b);
            }
        }
    }
}

impl Drop for Commit {
    /// Dropped before `finish` (a later step failed): undo.
    fn drop(&mut self) {
        self.undo();
    }
}

/// A second name for `target`'s current contents (a hard link; a copy where the file
/// system has no hard links).
fn backup(target: &Path) -> std::io::Result<PathBuf> {
    let p = sibling(target, "bak");
    if std::fs::hard_link(target, &p).is_err() {
        let (p, _) = create_sibling(target, "bak")?;
        if let Err(e) = std::fs::copy(target, &p) {
            let _ = std::fs::remove_file(&p);
            return Err(e);
        }
        return Ok(p);
    }
    Ok(p)
}

/// Writes to stdout or opens an existing non-regular file and writes to it.
fn stream(out: &Output, parts: &[&[u8]]) -> std::io::Result<()> {
    let write_all = |w: &mut dyn Write| parts.iter().try_for_each(|p| w.write_all(p));
    match out.target {
        Target::Stdout => {
            let mut w = std::io::stdout().lock();
            write_all(&mut w)?;
            w.flush()
        }
        _ => write_all(&mut OpenOptions::new().write(true).open(&out.shown)?),
    }
}

#[cfg(test)]
mod tests;
