//! What the stores write holds private witnesses: under a permissive umask (022) the
//! state directory is 0700 and the database, its WAL and spilled witnesses 0600; an
//! existing state directory and files an earlier version left open are narrowed when the
//! store opens; an object store's directory, when zkpipe creates it, is 0700 and its
//! witness objects 0600.

use crate::support::TempPostgres;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;
use zkpipe_engine::job_store::{fingerprint, JobStore, NewJob};
use zkpipe_engine::Priority;
use zkpipe_store::sqlite::{DB_FILE, WITNESS_DIR};
use zkpipe_store::{PgOptions, PgStore, SqliteStore};

/// The umask is the process's: the tests that set it take turns.
static UMASK: Mutex<()> = Mutex::new(());

/// Runs `f` with the process's umask at 022, then puts it back.
fn under_umask_022<T>(f: impl FnOnce() -> T) -> T {
    let _turn = UMASK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: umask has no memory effects; the lock keeps these tests from racing on it.
    #[allow(unsafe_code)]
    let old = unsafe { libc::umask(0o022) };
    let out = f();
    #[allow(unsafe_code)]
    unsafe {
        libc::umask(old)
    };
    out
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn job<'a>(witnesses: Vec<&'a [u8]>) -> NewJob<'a> {
    NewJob {
        key_id: "k",
        priority: Priority::Normal,
        request_id: "",
        fingerprint: fingerprint("k", &witnesses),
        key_shape: "shape-of-k".into(),
        witnesses,
        packed: false,
        staged: Vec::new(),
    }
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn the_state_directory_and_its_files_are_private_whatever_the_umask() {
    under_umask_022(|| {
        let parent = tempfile::tempdir().unwrap();
        let state = parent.path().join("state");
        let s = SqliteStore::open(&state).unwrap().with_inline_max(4);
        s.accept(&job(vec![b"a big witness", b"w"])).unwrap();
        assert_eq!(mode(&state), 0o700, "the state directory");
        assert_eq!(mode(&state.join(WITNESS_DIR)), 0o700, "witnesses/");
        let db = state.join(DB_FILE);
        let wal = state.join(format!("{DB_FILE}-wal"));
        assert!(wal.exists(), "the WAL is there to check");
        let spilled: Vec<_> = std::fs::read_dir(state.join(WITNESS_DIR))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(spilled.len(), 1, "the big witness is a file");
        for f in files_under(&state) {
            let want = if f.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode(&f), want, "{}", f.display());
        }
        assert_eq!((mode(&db), mode(&wal)), (0o600, 0o600));
    });
}

#[test]
fn an_existing_state_directory_is_made_private_when_opened() {
    under_umask_022(|| {
        let state = tempfile::tempdir().unwrap();
        {
            let s = SqliteStore::open(state.path()).unwrap().with_inline_max(4);
            s.accept(&job(vec![b"a big witness"])).unwrap();
        }
        // As an earlier version left it: everything readable by all.
        for f in files_under(state.path()) {
            let m = if f.is_dir() { 0o755 } else { 0o644 };
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(m)).unwrap();
        }
        std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let _s = SqliteStore::open(state.path()).unwrap();
        assert_eq!(mode(state.path()), 0o700);
        for f in files_under(state.path()) {
            let want = if f.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode(&f), want, "{}", f.display());
        }
    });
}

#[test]
fn an_object_store_directory_zkpipe_creates_is_private() {
    let pg = TempPostgres::start();
    under_umask_022(|| {
        let parent = tempfile::tempdir().unwrap();
        let objects = parent.path().join("objects");
        let s = PgStore::connect(&PgOptions {
            url: pg.url.clone(),
            daemon: "a".into(),
            objects: Some(format!("file://{}", objects.display())),
            inline_max: 4,
            connections: 2,
        })
        .unwrap();
        s.accept(&job(vec![b"a big witness"])).unwrap();
        assert_eq!(mode(&objects), 0o700);
        let files = files_under(&objects);
        assert!(files.iter().any(|f| f.is_file()), "the witness is a file");
        for f in files {
            let want = if f.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode(&f), want, "{}", f.display());
        }
    });
}
