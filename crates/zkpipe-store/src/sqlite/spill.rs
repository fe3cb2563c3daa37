//! The SQLite store's spilled witnesses: a witness above the inline limit is a file of its
//! own in `witnesses/`, written and synced by its submitter before its job queues for the
//! commit that names it (`commit.rs`). That keeps a
//! big job's gigabytes out of the single writer's transaction: measured on the GPU
//! machine, 1.28 GB of witnesses written inside it held every result write (and so the
//! device stage behind the tail) for 4–5 s per job
//! (lab/experiments/018a-job-store-witness-spill.md). Each file is 0600.

use super::SqliteStore;
use crate::private;
use std::sync::atomic::Ordering;
use std::time::SystemTime;
use zkpipe_engine::StoreError;

/// Files synced at once by [`SqliteStore::sync_files`].
const SYNC_THREADS: usize = 8;

impl SqliteStore {
    /// Deletes spilled files that no row names: left by a crash between writing them and
    /// committing their job (which then was never accepted).
    pub(super) fn remove_orphans(&self) -> Result<(), StoreError> {
        let named: std::collections::HashSet<String> = {
            let conn = self.lock();
            let mut q = conn
                .prepare("SELECT witness_file FROM partitions WHERE witness_file IS NOT NULL")
                .map_err(|e| self.err(e))?;
            let names = q
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(|e| self.err(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.err(e))?;
            names
        };
        let entries = std::fs::read_dir(&self.spill_dir).map_err(|e| self.err(e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !named.contains(&name) {
                let _ = std::fs::remove_file(entry.path());
            } else {
                // Written by a version that left them to the umask; the folder is 0700
                // anyway, so this is best effort.
                let _ = private::file(&entry.path(), false);
            }
        }
        Ok(())
    }

    /// Writes every witness above the inline limit to a file of its own (in parallel),
    /// not synced ([`Self::sync_files`] does); returns each partition's file name
    /// (`None`: inline). On failure, the files written so far are removed.
    /// Witnesses the store staged already (`staging.rs`) are left out: `None` too.
    pub(super) fn spill(
        &self,
        witnesses: &[&[u8]],
        staged: impl Fn(usize) -> bool,
    ) -> Result<Vec<Option<String>>, StoreError> {
        let names: Vec<Option<String>> = witnesses
            .iter()
            .enumerate()
            .map(|(i, w)| {
                (w.len() as u64 > self.inline_max && !staged(i)).then(|| self.spill_name(i))
            })
            .collect();
        if names.iter().all(Option::is_none) {
            return Ok(names);
        }
        let write = |name: &str, w: &[u8]| -> std::io::Result<()> {
            use std::io::Write;
            let mut f = private::new_file(&self.spill_dir.join(name))?;
            f.write_all(w)
        };
        // A few writers at once: one stream rarely fills a fast disk. One file (a job of
        // one partition) is written on the calling thread.
        let todo: Vec<_> = names.iter().zip(witnesses).collect();
        let results: Vec<std::io::Result<()>> = if todo.len() == 1 {
            todo.iter()
                .filter_map(|(n, w)| n.as_ref().map(|n| write(n, w)))
                .collect()
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = todo
                    .chunks(todo.len().div_ceil(4))
                    .map(|chunk| {
                        s.spawn(move || {
                            chunk
                                .iter()
                                .filter_map(|(n, w)| n.as_ref().map(|n| write(n, w)))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| {
                        h.join()
                            .unwrap_or_else(|_| vec![Err(std::io::Error::other("writer panicked"))])
                    })
                    .collect()
            })
        };
        let written = results.into_iter().collect::<std::io::Result<()>>();
        if let Err(e) = written {
            self.remove_files(names.iter().flatten());
            return Err(self.err(format!(
                "writing a witness to {}: {e}",
                self.spill_dir.display()
            )));
        }
        Ok(names)
    }

    /// A new spilled file's name, unique in this folder: the time, this process, a
    /// counter, and the partition `index`.
    pub(super) fn spill_name(&self, index: usize) -> String {
        let n = self.spilled.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{nanos}-{}-{n}-{index}.wtns", std::process::id())
    }

    /// Syncs the folder's entries (of files staged and synced already); nothing without
    /// witness syncs ([`super::SqliteOptions::witness_sync`]).
    pub(super) fn sync_dir(&self) -> std::io::Result<()> {
        if !self.witness_sync {
            return Ok(());
        }
        std::fs::File::open(&self.spill_dir)?.sync_all()
    }

    /// Syncs spilled files (a few at once: each sync waits for the disk, and concurrent
    /// ones share the filesystem's journal commits), then their folder's entries once.
    /// One file (a job of one partition) is synced on the calling thread.
    pub(super) fn sync_files(&self, names: &[&String]) -> std::io::Result<()> {
        if names.is_empty() || !self.witness_sync {
            return Ok(());
        }
        #[cfg(test)]
        if self.fail_file_sync.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("injected failure"));
        }
        let sync = |n: &String| std::fs::File::open(self.spill_dir.join(n))?.sync_data();
        if let [one] = names {
            sync(one)?;
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = names
                    .chunks(names.len().div_ceil(SYNC_THREADS))
                    .map(|chunk| s.spawn(move || chunk.iter().try_for_each(|&n| sync(n))))
                    .collect();
                handles.into_iter().try_for_each(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("a sync panicked")))
                })
            })?;
        }
        self.sync_dir()?;
        self.file_syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Removes spilled files (best effort: a leftover is removed at the next open).
    pub(super) fn remove_files<'a>(&self, names: impl IntoIterator<Item = &'a String>) {
        for n in names {
            let _ = std::fs::remove_file(self.spill_dir.join(n));
        }
    }
}
