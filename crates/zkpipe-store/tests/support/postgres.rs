//! A throwaway Postgres server for tests: `initdb` into a temporary directory, `postgres`
//! on a free loopback port, stopped and deleted on drop. The server binaries come from
//! `$ZKPIPE_PG_BIN`, else Debian's `/usr/lib/postgresql/<version>/bin` (newest), which
//! `scripts/install-postgres.sh` installs. As root, the server runs as the `postgres`
//! user (it refuses to run as root). A test that needs it and cannot find it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server (see the module doc).
pub struct TempPostgres {
    child: Child,
    bin: PathBuf,
    data: PathBuf,
    root: bool,
    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub url: String,
    _dir: tempfile::TempDir,
}

fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ZKPIPE_PG_BIN") {
        return dir.into();
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b).unwrap_or_else(|| {
        panic!(
            "no Postgres server binaries (initdb) under /usr/lib/postgresql: run \
             scripts/install-postgres.sh, or set ZKPIPE_PG_BIN to their folder"
        )
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `program` from `bin`, run as `postgres` when we are root.
fn command(bin: &Path, program: &str, root: bool) -> Command {
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(program));
        c
    } else {
        Command::new(bin.join(program))
    }
}

impl TempPostgres {
    /// Starts a server with an empty database `postgres`, trust authentication on
    /// loopback, and fsync off (tests do not pull the plug).
    pub fn start() -> Self {
        let bin = bin_dir();
        let root = is_root();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        if root {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown of the test database's folder to postgres failed");
        }
        let out = command(&bin, "initdb", root)
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.path().join("postgres.log")).unwrap();
        let child = command(&bin, "postgres", root)
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(dir.path())
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=300",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let pg = Self {
            child,
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            bin,
            data,
            root,
            _dir: dir,
        };
        let start = Instant::now();
        loop {
            let ready = Command::new(pg.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return pg;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the test Postgres did not start in 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs `sql` with psql; returns its rows, one per line, columns separated by `|`.
    pub fn query(&self, sql: &str) -> Vec<String> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(&self.url)
            .args(["-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        let stopped = command(&self.bin, "pg_ctl", self.root)
            .args(["stop", "-m", "immediate", "-D"])
            .arg(&self.data)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
