//! Witnesses staged while they arrive (a streamed submission): each is written to its own
//! file in `witnesses/` chunk by chunk, synced once complete, and mapped for the engine to
//! parse; the accept that follows records the file's name instead of writing the bytes
//! again (`store.rs`). A request then holds a few chunks in memory, not its witnesses
//! (measured on the GPU machine: 56–59 GiB resident for ~21 GB of 2^22 jobs in flight,
//! each job held whole as received and again as parsed;
//! lab/experiments/042e-accept-path.md).
//!
//! A staged file no job names is removed when the engine drops it (a refused or abandoned
//! request), or at the next open if the process died first (`spill.rs`,
//! `remove_orphans`).

use super::SqliteStore;
use crate::private;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use zkpipe_engine::job_store::{StagedWitness, StagingWitness};
use zkpipe_engine::StoreError;
use zkpipe_formats::mapped::MappedFile;

impl SqliteStore {
    /// A file for a witness of `bytes` about to arrive; `None` for one small enough to be
    /// kept in the database.
    pub(super) fn stage_file(&self, bytes: u64) -> Result<Option<Staging>, StoreError> {
        if bytes <= self.inline_max {
            return Ok(None);
        }
        let name = self.spill_name(0);
        let path = self.spill_dir.join(&name);
        let file = private::new_file(&path).map_err(|e| {
            self.err(format!(
                "creating a witness file in {}: {e}",
                self.spill_dir.display()
            ))
        })?;
        Ok(Some(Staging {
            file,
            sync: self.witness_sync,
            staged: StagedFile {
                path,
                name,
                db: self.path.display().to_string(),
                kept: AtomicBool::new(false),
            },
        }))
    }
}

/// A staged file: removed when dropped, unless a job's record names it
/// ([`StagedWitness::keep`]), whether it was written whole or not.
struct StagedFile {
    path: PathBuf,
    name: String,
    /// The database, for errors.
    db: String,
    kept: AtomicBool,
}

impl StagedFile {
    fn err(&self, what: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::Database {
            path: self.db.clone(),
            message: format!("{what} {}: {e}", self.path.display()),
        }
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.kept.load(Ordering::Acquire) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A witness file being written ([`StagingWitness`]).
pub(super) struct Staging {
    file: File,
    /// [`super::SqliteOptions::witness_sync`].
    sync: bool,
    staged: StagedFile,
}

impl StagingWitness for Staging {
    fn write(&mut self, data: &[u8]) -> Result<(), StoreError> {
        self.file
            .write_all(data)
            .map_err(|e| self.staged.err("writing the witness", e))
    }

    /// Syncs the written file and maps it. The data is durable before any record can
    /// name the file; the folder's entry is synced with the job's accept (`store.rs`).
    fn finish(self: Box<Self>) -> Result<Box<dyn StagedWitness>, StoreError> {
        // On an error `staged` is dropped here, and the file with it.
        let Staging { file, sync, staged } = *self;
        if sync {
            file.sync_data()
                .map_err(|e| staged.err("syncing the witness", e))?;
        }
        drop(file);
        let map =
            MappedFile::open(&staged.path).map_err(|e| staged.err("mapping the witness", e))?;
        Ok(Box::new(Staged { map, staged }))
    }
}

/// A staged witness, synced and mapped ([`StagedWitness`]).
struct Staged {
    map: MappedFile,
    staged: StagedFile,
}

impl StagedWitness for Staged {
    fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }

    fn name(&self) -> &str {
        &self.staged.name
    }

    fn release(&self) {
        self.map.release(0..self.map.bytes().len());
    }

    fn keep(&self) {
        self.staged.kept.store(true, Ordering::Release);
    }
}
