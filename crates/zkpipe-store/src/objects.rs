//! Where a shared store keeps witnesses too large for its database: a directory
//! (`file:///srv/zkpipe/objects`) or an S3-compatible bucket (`s3://bucket/prefix`, with
//! credentials, region and endpoint from the usual `AWS_*` variables), through the
//! `object_store` crate. Every daemon of a fleet must reach the same place. In a
//! directory, what zkpipe creates is private: the directory itself (when it does not
//! exist yet) and the folders under it are 0700, the witness files 0600.

use crate::private;
use object_store::{path::Path as ObjectPath, ObjectStore, PutPayload};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use zkpipe_engine::StoreError;

/// An object store with the prefix objects are named under.
#[derive(Clone)]
pub(crate) struct Objects {
    store: Arc<dyn ObjectStore>,
    /// The directory of a `file://` store: its writes are synced here, since
    /// `object_store` renames a written file into place without syncing it, and a job row
    /// that commits must not name a witness a power cut can take back.
    local: Option<(Arc<object_store::local::LocalFileSystem>, PathBuf)>,
    prefix: String,
    url: String,
}

impl Objects {
    /// Opens the store `url` names (`file://` or `s3://`).
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let bad = |m: String| StoreError::Config(format!("object store {url:?}: {m}"));
        if let Some(dir) = url.strip_prefix("file://") {
            if !dir.starts_with('/') {
                return Err(bad("a file:// URL needs an absolute path".into()));
            }
            // A directory that exists is the operator's (a fleet's shared mount, say):
            // its mode is theirs to choose.
            if !std::path::Path::new(dir).exists() {
                private::dir(std::path::Path::new(dir)).map_err(|e| bad(e.to_string()))?;
            }
            let root = std::fs::canonicalize(dir).map_err(|e| bad(e.to_string()))?;
            let fs = Arc::new(
                object_store::local::LocalFileSystem::new_with_prefix(&root)
                    .map_err(|e| bad(e.to_string()))?,
            );
            return Ok(Self {
                store: fs.clone(),
                local: Some((fs, root)),
                prefix: String::new(),
                url: url.into(),
            });
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("no bucket".into()));
            }
            let s3 = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| bad(e.to_string()))?;
            return Ok(Self {
                store: Arc::new(s3),
                local: None,
                prefix: prefix.trim_matches('/').to_string(),
                url: url.into(),
            });
        }
        Err(bad("not a file:// or s3:// URL".into()))
    }

    /// The object name of partition `index` of job `job`.
    pub fn name(&self, job: i64, index: usize) -> String {
        let name = format!("zkpipe/jobs/{job}/{index}.witness");
        if self.prefix.is_empty() {
            name
        } else {
            format!("{}/{name}", self.prefix)
        }
    }

    fn err(&self, name: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::Database {
            path: format!("{}/{name}", self.url.trim_end_matches('/')),
            message: e.to_string(),
        }
    }

    /// Writes `bytes` as `name`, on disk (or in the bucket) when this returns.
    pub async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        let path = ObjectPath::from(name);
        self.store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(|e| self.err(name, e))?;
        let Some((fs, root)) = &self.local else {
            return Ok(());
        };
        let file = fs
            .path_to_filesystem(&path)
            .map_err(|e| self.err(name, e))?;
        let root = root.clone();
        tokio::task::spawn_blocking(move || sync_up(&file, &root))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
            .map_err(|e| self.err(name, format_args!("syncing: {e}")))
    }

    /// Reads `name`.
    pub async fn get(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let r = self.store.get(&ObjectPath::from(name)).await;
        let bytes = match r {
            Ok(r) => r.bytes().await,
            Err(e) => Err(e),
        };
        bytes.map(|b| b.to_vec()).map_err(|e| self.err(name, e))
    }

    /// Deletes `names`, logging (not failing on) what could not be deleted: a leftover
    /// witness costs space, not correctness.
    pub async fn delete(&self, names: &[String]) {
        for name in names {
            if let Err(e) = self.store.delete(&ObjectPath::from(name.as_str())).await {
                if !matches!(e, object_store::Error::NotFound { .. }) {
                    tracing::warn!("deleting witness object {name}: {e}");
                }
            }
        }
    }
}

/// Makes `file` 0600 and the folders below `root` that hold it 0700 (`object_store`
/// creates them with the umask's modes), then syncs `file` and every directory from its
/// own up to `root`: the directories a write created (a job's) hold the entries that make
/// it reachable.
fn sync_up(file: &std::path::Path, root: &std::path::Path) -> std::io::Result<()> {
    let f = std::fs::File::open(file)?;
    f.set_permissions(std::fs::Permissions::from_mode(private::FILE_MODE))?;
    f.sync_all()?;
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d != root && d.starts_with(root) {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(private::DIR_MODE))?;
        }
        std::fs::File::open(d)?.sync_all()?;
        if d == root || !d.starts_with(root) {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}
