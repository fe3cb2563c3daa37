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
            file: Some(file),
            witness: Unnamed {
                path,
                name,
                db: self.path.display().to_string(),
            },
        }))
    }
}

/// A staged file's place and name.
#[derive(Default)]
struct Unnamed {
    path: PathBuf,
    name: String,
    /// The database, for errors.
    db: String,
}

impl Unnamed {
    fn err(&self, what: &str, e: std::io::Error) -> StoreError {
        StoreError::Database {
            path: self.db.clone(),
            message: format!("{what} {}: {e}", self.path.display()),
        }
    }
}

/// A witness file being written ([`StagingWitness`]); removed if dropped unfinished.
pub(super) struct Staging {
    /// `None` once finished.
    file: Option<File>,
    witness: Unnamed,
}

impl StagingWitness for Staging {
    fn write(&mut self, data: &[u8]) -> Result<(), StoreError> {
        let file = self.file.as_mut().ok_or_else(|| StoreError::Database {
            path: self.witness.db.clone(),
            message: "a staged witness written after it was finished".into(),
        })?;
        file.write_all(data)
            .map_err(|e| self.witness.err("writing the witness", e))
    }

    fn finish(mut self: Box<Self>) -> Result<Box<dyn StagedWitness>, StoreError> {
        // On an error the file is still open here, so dropping `self` removes it.
        let map = self.seal()?;
        self.file = None;
        let witness = std::mem::take(&mut self.witness);
        Ok(Box::new(Staged {
            map,
            witness,
            kept: AtomicBool::new(false),
        }))
    }
}

impl Staging {
    /// Syncs the written file and maps it. The data is durable before any record can
    /// name the file; the folder's entry is synced with the job's accept (`store.rs`).
    fn seal(&self) -> Result<MappedFile, StoreError> {
        let w = &self.witness;
        let file = self.file.as_ref().ok_or_else(|| StoreError::Database {
            path: w.db.clone(),
            message: "a staged witness finished twice".into(),
        })?;
        file.sync_data()
            .map_err(|e| w.err("syncing the witness", e))?;
        MappedFile::open(&w.path).map_err(|e| StoreError::Database {
            path: w.db.clone(),
            message: format!("mapping the staged witness: {e}"),
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = std::fs::remove_file(&self.witness.path);
        }
    }
}

/// A staged witness, synced and mapped ([`StagedWitness`]).
struct Staged {
    map: MappedFile,
    witness: Unnamed,
    kept: AtomicBool,
}

impl StagedWitness for Staged {
    fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }

    fn name(&self) -> &str {
        &self.witness.name
    }

    fn release(&self) {
        self.map.release(0..self.map.bytes().len());
    }

    fn keep(&self) {
        self.kept.store(true, Ordering::Release);
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.kept.load(Ordering::Acquire) {
            let _ = std::fs::remove_file(&self.witness.path);
        }
    }
}
