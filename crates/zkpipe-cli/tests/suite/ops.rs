//! The daemon's operations, run as processes on loopback with the CLI as the client: job
//! and stage events in text and JSON logs, SIGTERM/SIGINT draining in-flight work and
//! exiting 0 with a last line, flags and environment over the config file, the token
//! required beyond loopback and checked on every call (gRPC and HTTP), TLS with a
//! self-signed certificate, and error messages that say each cause once.

use crate::common;

use common::{assert_one_line_error, fixture};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Variables that would change what these tests run, cleared from every process.
const ENV: [&str; 11] = [
    "ZKPIPE_CONFIG",
    "ZKPIPE_GRPC_LISTEN",
    "ZKPIPE_HTTP_LISTEN",
    "ZKPIPE_KEY_DIR",
    "ZKPIPE_TOKEN",
    "ZKPIPE_TOKEN_FILE",
    "ZKPIPE_LOG",
    "ZKPIPE_LOG_FORMAT",
    "ZKPIPE_SERVER",
    "ZKPIPE_CA_CERT",
    "ZKPIPE_STATE_DIR",
];

const TOKEN: &str = "test-token-0123456789abcdef";

fn zkpipe() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zkpipe"));
    for v in ENV {
        c.env_remove(v);
    }
    c
}

fn run(mut c: Command) -> Output {
    c.output().expect("zkpipe runs")
}

/// A folder with `keys/pos.zkey` (BN254 Poseidon) and room for config files.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    std::fs::copy(
        fixture("bn254", "poseidon").join("circuit.zkey"),
        dir.path().join("keys/pos.zkey"),
    )
    .unwrap();
    dir
}

fn witness() -> PathBuf {
    fixture("bn254", "poseidon").join("witness.wtns")
}

/// Writes `text` as `name` in `dir`; returns its path.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Small pools: the tests share 2 cores, and one worker per stage keeps a job in flight
/// long enough to signal the daemon meanwhile.
const SMALL: &str = "[keys]\ndir = \"keys\"\nchecks = \"trusted\"\n\
    [reduce]\nworkers = 1\nthreads = 1\n[device]\nworkers = 1\nthreads = 1\n[tail]\nworkers = 1\nthreads = 1\n";

fn loopback_config(dir: &Path, server_extra: &str) -> PathBuf {
    write(
        dir,
        "zkpipe.toml",
        &format!(
            "[server]\ngrpc_listen = \"127.0.0.1:0\"\nhttp_listen = \"127.0.0.1:0\"\n{server_extra}\n{SMALL}"
        ),
    )
}

/// A running `zkpipe serve`; its stderr is collected line by line. Killed on drop.
struct Daemon {
    child: Child,
    grpc: String,
    http: String,
    log: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl Daemon {
    /// Starts `cmd` (a `serve` command) and reads its first line of stdout.
    fn start(mut cmd: Command) -> Daemon {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (sink, stderr) = (Arc::clone(&log), child.stderr.take().unwrap());
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                sink.lock().unwrap().push(line);
            }
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let mut d = Daemon {
            child,
            grpc: String::new(),
            http: String::new(),
            log,
            reader: Some(reader),
        };
        let addr = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .map(str::to_string)
        };
        match (addr("grpc="), addr("http=")) {
            (Some(g), Some(h)) => (d.grpc, d.http) = (g, h),
            _ => {
                let _ = d.child.wait();
                d.reader.take().unwrap().join().unwrap();
                panic!("daemon did not start: {line:?} {:?}", d.log());
            }
        }
        d
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits until a log line contains `needle`.
    fn wait_log(&self, needle: &str) {
        let t0 = Instant::now();
        while !self.log().iter().any(|l| l.contains(needle)) {
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "no log line with {needle:?}: {:#?}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    }

    /// Waits for the process to exit; returns its status and every log line.
    fn wait_exit(mut self) -> (ExitStatus, Vec<String>) {
        let status = self.child.wait().unwrap();
        self.reader.take().unwrap().join().unwrap();
        (status, self.log())
    }

    /// A client command against this daemon.
    fn client(&self, args: &[&str]) -> Command {
        let mut c = zkpipe();
        c.args(args).args(["--server", &self.grpc]);
        c
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(config: &Path) -> Command {
    let mut c = zkpipe();
    c.arg("serve").arg("--config").arg(config);
    c.args(["--backend", "cpu"]);
    c
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A plain HTTP/1.0 GET with an optional bearer token; returns (status code, body).
fn http_get(stream: &mut impl ReadWrite, path: &str, token: Option<&str>) -> (u16, String) {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(stream, "GET {path} HTTP/1.0\r\nHost: x\r\n{auth}\r\n").unwrap();
    let mut out = Vec::new();
    // A TLS peer may close without close_notify; what was read is enough.
    let _ = stream.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).to_string();
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {out:?}"));
    (
        code,
        out.split_once("\r\n\r\n").map_or("", |x| x.1).to_string(),
    )
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn plain_get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    http_get(
        &mut std::net::TcpStream::connect(addr).unwrap(),
        path,
        token,
    )
}

fn job_events_present(log: &[String], has: impl Fn(&str, &[&str]) -> bool) {
    for (message, fields) in [
        ("job accepted", &["job", "partitions"][..]),
        ("key loaded", &["key", "seconds"][..]),
        ("stage done", &["reduce", "ms"][..]),
        ("stage done", &["device", "ms"][..]),
        ("stage done", &["tail", "ms"][..]),
        ("job done", &["total_ms", "partitions"][..]),
    ] {
        assert!(
            has(message, fields),
            "no {message:?} event with {fields:?} in {log:#?}"
        );
    }
}

#[test]
fn sigterm_finishes_in_flight_jobs_refuses_new_ones_and_exits_zero_with_a_last_line() {
    let dir = workdir();
    let cfg = loopback_config(dir.path(), "shutdown_grace = \"120s\"");
    let d = Daemon::start(serve(&cfg));
    // 32 partitions on one worker per stage: in flight for seconds.
    let w = witness();
    let mut submit = d.client(&["submit", "pos"]);
    submit.args(std::iter::repeat_n(&w, 32));
    let job = stdout(&run(submit));
    d.wait_log("job accepted");
    d.signal("-TERM");
    d.wait_log("shutting down");
    // New jobs are refused while the accepted one finishes.
    let mut again = d.client(&["submit", "pos"]);
    again.arg(&w);
    assert_one_line_error(&run(again), &["Unavailable", "shutting down"]);
    let done = run(d.client(&["await", &job, "--timeout", "120s"]));
    assert_eq!(stdout(&done), "done");
    let (status, log) = d.wait_exit();
    assert!(status.success(), "exit {status:?}: {log:#?}");
    assert!(
        log.last().is_some_and(|l| l.contains("stopped")),
        "last line: {log:#?}"
    );
    job_events_present(&log, |message, fields| {
        log.iter().any(|l| {
            l.contains(message)
                && fields
                    .iter()
                    .all(|f| l.contains(&format!("{f}=")) || l.contains(&format!("=\"{f}\"")))
        })
    });
    assert!(log
        .iter()
        .any(|l| l.contains("job done") && l.contains("partitions=32")));
}

#[test]
fn json_logs_carry_the_job_events_and_sigint_stops_the_daemon() {
    let dir = workdir();
    let cfg = loopback_config(dir.path(), "");
    let mut cmd = serve(&cfg);
    cmd.env("ZKPIPE_LOG_FORMAT", "json");
    let d = Daemon::start(cmd);
    let w = witness();
    let mut submit = d.client(&["submit", "pos"]);
    submit.args([&w, &w]);
    let job = stdout(&run(submit));
    assert_eq!(stdout(&run(d.client(&["await", &job]))), "done");
    d.signal("-INT");
    let (status, log) = d.wait_exit();
    assert!(status.success(), "exit {status:?}: {log:#?}");
    let events: Vec<serde_json::Value> = log
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect();
    job_events_present(&log, |message, fields| {
        events.iter().any(|e| {
            e["message"] == message && fields.iter().all(|f| !e[*f].is_null() || e["stage"] == *f)
        })
    });
    let done = events.iter().find(|e| e["message"] == "job done").unwrap();
    assert_eq!(done["partitions"], 2);
    assert!(done["total_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(done["level"], "INFO");
    let signal = events
        .iter()
        .find(|e| e["message"].as_str().unwrap().contains("shutting down"))
        .unwrap();
    assert_eq!(signal["signal"], "SIGINT");
    assert_eq!(events.last().unwrap()["message"], "stopped");
}

#[test]
fn flags_and_environment_override_the_config_file() {
    let dir = workdir();
    // The file's addresses are taken and its key folder does not exist: the daemon starts
    // only if every one of them is overridden.
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = busy.local_addr().unwrap().to_string();
    let cfg = write(
        dir.path(),
        "zkpipe.toml",
        &format!(
            "[server]\ngrpc_listen = \"{taken}\"\nhttp_listen = \"{taken}\"\n[keys]\ndir = \"nowhere\"\n"
        ),
    );
    let keys = dir.path().join("keys");
    let mut cmd = serve(&cfg);
    cmd.args(["--grpc-listen", "127.0.0.1:0", "--key-dir"])
        .arg(&keys)
        // Flag over environment: this variable names the taken port and a missing folder.
        .env("ZKPIPE_GRPC_LISTEN", &taken)
        .env("ZKPIPE_KEY_DIR", dir.path().join("nowhere"))
        .env("ZKPIPE_HTTP_LISTEN", "127.0.0.1:0");
    let d = Daemon::start(cmd);
    assert_ne!(d.grpc, taken);
    assert_ne!(d.http, taken);
    assert_eq!(stdout(&run(d.client(&["preload", "pos"]))), "pos: hot");
    drop(d);

    // Environment over the file, and no file at all.
    let mut cmd = serve(&cfg);
    cmd.env("ZKPIPE_GRPC_LISTEN", "127.0.0.1:0")
        .env("ZKPIPE_HTTP_LISTEN", "127.0.0.1:0")
        .env("ZKPIPE_KEY_DIR", &keys);
    let d = Daemon::start(cmd);
    assert_eq!(stdout(&run(d.client(&["preload", "pos"]))), "pos: hot");
    drop(d);
    let mut cmd = zkpipe();
    cmd.current_dir(dir.path()).args([
        "serve",
        "--backend",
        "cpu",
        "--grpc-listen",
        "127.0.0.1:0",
        "--http-listen",
        "127.0.0.1:0",
    ]);
    // keys.dir's default, "keys", relative to the working directory.
    let d = Daemon::start(cmd);
    assert_eq!(stdout(&run(d.client(&["preload", "pos"]))), "pos: hot");
    drop(busy);
}

#[test]
fn a_bind_beyond_loopback_needs_a_token() {
    let dir = workdir();
    let keys = dir.path().join("keys");
    let beyond = |cmd: &mut Command| {
        // The job store's default folder is in the working directory.
        cmd.current_dir(dir.path())
            .args(["--grpc-listen", "0.0.0.0:0", "--http-listen", "127.0.0.1:0"])
            .arg("--key-dir")
            .arg(&keys);
    };
    let mut cmd = zkpipe();
    cmd.args(["serve", "--backend", "cpu"]);
    beyond(&mut cmd);
    assert_one_line_error(
        &run(cmd),
        &["0.0.0.0:0 is beyond loopback", "no token", "ZKPIPE_TOKEN"],
    );
    // An old file's `allow_remote = true` is not enough.
    let old = write(
        dir.path(),
        "old.toml",
        "[server]\nallow_remote = true\ngrpc_listen = \"127.0.0.1:0\"\nhttp_listen = \"0.0.0.0:0\"\n",
    );
    assert_one_line_error(
        &run(serve(&old)),
        &["old.toml", "server.http_listen", "no token", "token_file"],
    );
    // A guessable token is refused too.
    let mut cmd = zkpipe();
    cmd.args(["serve", "--backend", "cpu"])
        .env("ZKPIPE_TOKEN", "short");
    beyond(&mut cmd);
    assert_one_line_error(&run(cmd), &["ZKPIPE_TOKEN", "at least 16"]);
    // With a token it serves (reached here over loopback only).
    let mut cmd = zkpipe();
    cmd.args(["serve", "--backend", "cpu"])
        .env("ZKPIPE_TOKEN", TOKEN);
    beyond(&mut cmd);
    let d = Daemon::start(cmd);
    let port = d.grpc.rsplit_once(':').unwrap().1.to_string();
    let mut status = zkpipe();
    status
        .args(["status", "--server", &format!("127.0.0.1:{port}")])
        .env("ZKPIPE_TOKEN", TOKEN);
    assert!(stdout(&run(status)).contains("uptime"));
    d.wait_log("without TLS");
}

#[test]
fn with_a_token_every_call_needs_it() {
    let dir = workdir();
    let token_file = write(dir.path(), "token", &format!("{TOKEN}\n"));
    // Others may read it: a warning, not a refusal (container secrets are often 0644).
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let cfg = loopback_config(dir.path(), "token_file = \"token\"");
    let d = Daemon::start(serve(&cfg));

    assert_one_line_error(
        &run(d.client(&["status"])),
        &["Unauthenticated", "missing bearer token"],
    );
    let mut wrong = d.client(&["preload", "pos"]);
    wrong.args(["--token", "wrong-token-0123456789abcdef"]);
    assert_one_line_error(&run(wrong), &["Unauthenticated", "invalid bearer token"]);
    let mut by_file = d.client(&["preload", "pos"]);
    by_file.arg("--token-file").arg(&token_file);
    assert_eq!(stdout(&run(by_file)), "pos: hot");
    let mut by_env = d.client(&["status"]);
    by_env.env("ZKPIPE_TOKEN", TOKEN);
    assert!(stdout(&run(by_env)).contains("key pos"));

    // HTTP: /metrics and /trace need the token, /healthz does not.
    assert_eq!(plain_get(&d.http, "/healthz", None), (200, "ok\n".into()));
    for path in ["/metrics", "/trace"] {
        assert_eq!(plain_get(&d.http, path, None).0, 401, "{path}");
        assert_eq!(plain_get(&d.http, path, Some("nope")).0, 401, "{path}");
        assert_eq!(plain_get(&d.http, path, Some(TOKEN)).0, 200, "{path}");
    }
    assert!(plain_get(&d.http, "/metrics", Some(TOKEN))
        .1
        .contains("zkpipe_memory_limit_bytes"));
    d.wait_log("gRPC call refused");
    d.wait_log("world-readable");
}

#[test]
fn tls_serves_grpc_and_http_with_a_self_signed_certificate() {
    let dir = workdir();
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = write(dir.path(), "cert.pem", &ck.cert.pem());
    write(dir.path(), "key.pem", &ck.signing_key.serialize_pem());
    let cfg = loopback_config(
        dir.path(),
        "tls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\ntoken_file = \"token\"",
    );
    write(dir.path(), "token", TOKEN);
    let d = Daemon::start(serve(&cfg));
    let https = format!("https://{}", d.grpc);

    let mut ok = zkpipe();
    ok.args(["status", "--server", &https, "--token", TOKEN, "--ca-cert"])
        .arg(&cert);
    assert!(stdout(&run(ok)).contains("uptime"));
    // Without the certificate to trust, and in plain text: one-line refusals.
    let mut untrusted = zkpipe();
    untrusted.args(["status", "--server", &https, "--token", TOKEN]);
    // (Where the system has no CA roots at all the message differs: no certificate words.)
    assert_one_line_error(&run(untrusted), &["cannot connect"]);
    let mut plain = zkpipe();
    plain.args(["status", "--server", &d.grpc, "--token", TOKEN]);
    let o = run(plain);
    assert!(!o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr)
            .trim_end()
            .lines()
            .count(),
        1
    );

    // HTTP over the same certificate.
    let tls_get = |path: &str, token: Option<&str>| {
        use tokio_rustls::rustls;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ck.cert.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = "localhost".try_into().unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(cfg), name).unwrap();
        let tcp = std::net::TcpStream::connect(&d.http).unwrap();
        http_get(&mut rustls::StreamOwned::new(conn, tcp), path, token)
    };
    assert_eq!(tls_get("/healthz", None), (200, "ok\n".into()));
    assert_eq!(tls_get("/metrics", None).0, 401);
    assert_eq!(tls_get("/metrics", Some(TOKEN)).0, 200);
}

#[test]
fn each_cause_is_said_once() {
    let dir = workdir();
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = busy.local_addr().unwrap().to_string();
    let mut cmd = zkpipe();
    cmd.current_dir(dir.path())
        .args(["serve", "--backend", "cpu", "--grpc-listen", &taken])
        .args(["--http-listen", "127.0.0.1:0", "--key-dir"])
        .arg(dir.path().join("keys"));
    let o = run(cmd);
    assert_one_line_error(&o, &["cannot listen on", "Address already in use"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("Address already in use").count(), 1, "{err}");

    let closed = busy.local_addr().unwrap().port();
    drop(busy);
    let mut status = zkpipe();
    status.args(["status", "--server", &format!("127.0.0.1:{closed}")]);
    let o = run(status);
    assert_one_line_error(&o, &["cannot connect", "Connection refused"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.matches("tcp connect error").count() <= 1, "{err}");
    assert_eq!(err.matches("Connection refused").count(), 1, "{err}");
}

/// A daemon refused for its configuration (here a key folder that does not exist) leaves
/// no state folder behind.
#[test]
fn a_refused_serve_leaves_no_state_directory() {
    let dir = workdir();
    let mut cmd = zkpipe();
    cmd.current_dir(dir.path())
        .args(["serve", "--backend", "cpu", "--grpc-listen", "127.0.0.1:0"])
        .args(["--http-listen", "127.0.0.1:0", "--key-dir", "nowhere"])
        .args(["--state-dir", "state"]);
    assert_one_line_error(&run(cmd), &["key directory", "nowhere", "does not exist"]);
    assert!(
        !dir.path().join("state").exists(),
        "a state folder was left"
    );
}
