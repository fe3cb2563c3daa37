//! The SQLite store's group commit: a writer commits under the connection's lock (WAL
//! frames written, not synced: `synchronous = NORMAL`) and numbers its commit; it then
//! syncs the WAL outside the lock, and one sync covers every commit numbered before it,
//! so writers that commit at the same time share it.

use super::{sibling, SqliteStore};
use std::sync::atomic::Ordering;
use zkpipe_engine::StoreError;

impl SqliteStore {
    /// Commits `tx` (the WAL frames written, not yet synced) and numbers the commit for
    /// [`Self::sync_commits`]. Called with the connection's lock held (`tx` borrows it).
    pub(super) fn commit(&self, tx: rusqlite::Transaction<'_>) -> Result<u64, StoreError> {
        tx.commit().map_err(|e| self.err(e))?;
        Ok(self.committed.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// Runs `f` in one transaction under the connection's lock, commits, and returns once
    /// the commit is on disk (synced outside the lock, [`Self::sync_commits`]).
    pub(super) fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let (out, seq) = {
            let mut conn = self.lock();
            let tx = conn.transaction().map_err(|e| self.err(e))?;
            let out = f(&tx)?;
            (out, self.commit(tx)?)
        };
        self.sync_commits(seq)?;
        Ok(out)
    }

    /// Returns once commit `seq` is on disk. The first writer to get here syncs the WAL
    /// for every commit made so far; the writers that queue behind it meanwhile find
    /// their commits covered and return without a sync of their own (group commit). Runs
    /// without the connection's lock, so the next writers commit during the sync.
    pub(super) fn sync_commits(&self, seq: u64) -> Result<(), StoreError> {
        let mut synced = self.synced.lock().unwrap_or_else(|e| e.into_inner());
        if *synced >= seq {
            return Ok(());
        }
        // Every commit counted so far has its frames in the WAL: this sync covers them.
        let through = self.committed.load(Ordering::SeqCst);
        let wal = sibling(&self.path, "-wal");
        match std::fs::File::open(&wal) {
            Ok(f) => f
                .sync_data()
                .map_err(|e| self.err(format!("syncing the WAL: {e}")))?,
            // No WAL: a checkpoint moved every frame into the database and synced it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.err(format!("opening the WAL: {e}"))),
        }
        self.syncs.fetch_add(1, Ordering::Relaxed);
        *synced = through;
        Ok(())
    }
}
