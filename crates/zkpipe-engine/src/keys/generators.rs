//! Keys' witness generators. A key proves from circuit inputs when it has one: circom's
//! `<id>.wasm` or its native generator `<id>` (with `<id>.dat`) beside `<id>.zkey`, or a
//! path the configuration names for the key. Which of the two a file is, its content says
//! (`zkpipe_witness::Generator::open`). Each is compiled once and shared by every
//! synthesis worker (each keeps its own instance); a changed file is compiled again.

use crate::error::EngineError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use zkpipe_witness::Generator;

/// Finds, compiles and caches keys' generators.
pub(crate) struct Generators {
    dir: PathBuf,
    configured: HashMap<String, PathBuf>,
    cache: Mutex<HashMap<String, Cached>>,
}

struct Cached {
    path: PathBuf,
    stamp: Stamp,
    generator: Arc<Generator>,
}

/// What tells a changed file: its length and modification time.
type Stamp = (u64, Option<SystemTime>);

impl Generators {
    /// Generators in `dir` (the key directory), plus `configured` key id → path.
    pub fn new(dir: PathBuf, configured: HashMap<String, PathBuf>) -> Self {
        Self {
            dir,
            configured,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Key `id`'s generator, compiled on first use (and again if its file changed).
    pub fn get(&self, id: &str) -> Result<Arc<Generator>, EngineError> {
        let failed = |message: String| EngineError::Generator {
            key: id.to_string(),
            message,
        };
        let path = self.find(id)?;
        let stamp = stamp(&path).map_err(|e| failed(format!("{}: {e}", path.display())))?;
        if let Some(c) = self.lock().get(id) {
            if c.path == path && c.stamp == stamp {
                return Ok(Arc::clone(&c.generator));
            }
        }
        // Compiled outside the lock: a large circuit takes a while, and other keys'
        // requests should not wait for it. Two racing first requests compile twice.
        let started = std::time::Instant::now();
        let generator = Arc::new(Generator::open(&path).map_err(|e| failed(e.to_string()))?);
        tracing::info!(key = id, path = %path.display(), ms = crate::trace::log_ms(started.elapsed()), "witness generator loaded");
        self.lock().insert(
            id.to_string(),
            Cached {
                path,
                stamp,
                generator: Arc::clone(&generator),
            },
        );
        Ok(generator)
    }

    /// Whether key `id` has a generator (without compiling it).
    pub fn has(&self, id: &str) -> bool {
        self.find(id).is_ok()
    }

    fn find(&self, id: &str) -> Result<PathBuf, EngineError> {
        if !crate::keys::valid_key_id(id) {
            return Err(EngineError::InvalidKeyId(id.to_string()));
        }
        if let Some(p) = self.configured.get(id) {
            return Ok(p.clone());
        }
        let wasm = self.dir.join(format!("{id}.wasm"));
        if wasm.is_file() {
            return Ok(wasm);
        }
        let native = self.dir.join(id);
        if native.is_file() {
            return Ok(native);
        }
        Err(EngineError::Generator {
            key: id.to_string(),
            message: format!(
                "no witness generator to prove from inputs: put circom's {id}.wasm, or its \
                 native generator {id} with {id}.dat, beside {id}.zkey, or name one in \
                 [generators] of the configuration"
            ),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    let m = std::fs::metadata(path)?;
    Ok((m.len(), m.modified().ok()))
}
