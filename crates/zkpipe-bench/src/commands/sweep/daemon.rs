//! A `zkpipe serve` child process of `zkpipe-bench sweep`: started on loopback ports with a
//! fresh state folder and its log (stderr) in a file, stopped with SIGTERM, killed on drop.
//! The `zkpipe` binary is the one in `zkpipe-bench`'s own folder unless `--zkpipe` names
//! another ([`sibling_zkpipe`]).

use anyhow::{anyhow, Context, Result};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest wait for a started daemon to print its addresses.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest wait for a daemon to exit after SIGTERM (its shutdown grace is 5 s by default).
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// Log lines quoted in an error.
const LOG_TAIL: usize = 5;

/// How to start a daemon: everything but its state folder and settings.
pub struct ServeCommand {
    /// The zkpipe binary.
    pub exe: PathBuf,
    /// `--config`, if any.
    pub config: Option<PathBuf>,
    /// `--backend`'s value.
    pub backend: String,
}

impl ServeCommand {
    /// `serve`'s arguments: loopback ports chosen by the OS, `state_dir`, and one
    /// `--set section.key=value` per setting.
    pub fn args(&self, state_dir: &Path, settings: &[String]) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["serve".into()];
        if let Some(c) = &self.config {
            args.extend(["--config".into(), c.into()]);
        }
        args.extend([
            "--backend".into(),
            self.backend.clone().into(),
            "--grpc-listen".into(),
            "127.0.0.1:0".into(),
            "--http-listen".into(),
            "127.0.0.1:0".into(),
            "--state-dir".into(),
            state_dir.into(),
        ]);
        for s in settings {
            args.extend(["--set".into(), s.into()]);
        }
        args
    }
}

/// The `zkpipe` binary in the folder of this process's executable: cargo builds both
/// binaries of the workspace into one folder (`target/<profile>/`), scripts/build-cuda.sh
/// keeps them together, and the product a sweep measures is the one built beside it.
pub fn sibling_zkpipe() -> Result<PathBuf> {
    let me = std::env::current_exe().context("finding this binary's folder")?;
    let exe = me.with_file_name(format!("zkpipe{}", std::env::consts::EXE_SUFFIX));
    if exe.is_file() {
        Ok(exe)
    } else {
        Err(anyhow!(
            "{}: no zkpipe binary beside {} (build it, e.g. cargo build -p zkpipe-cli, \
             or give --zkpipe FILE)",
            exe.display(),
            me.display()
        ))
    }
}

/// A running daemon.
pub struct Daemon {
    /// The variant it serves.
    pub variant: String,
    /// `http://host:port` of its gRPC API.
    pub grpc: String,
    child: Child,
    log: PathBuf,
    stopped: bool,
    /// Its job store; removed after the process is gone (fields drop after `drop`).
    _state: tempfile::TempDir,
}

/// The gRPC and HTTP addresses in the daemon's first line, "zkpipe: serving grpc=A http=B".
pub fn parse_bound(line: &str) -> Option<(String, String)> {
    let addr = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .map(str::to_string)
    };
    Some((addr("grpc=")?, addr("http=")?))
}

/// The last lines of a log, joined on one line.
pub fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL)..].join(" | ");
    if tail.is_empty() {
        "its log is empty".into()
    } else {
        format!("last log lines: {tail}")
    }
}

impl Daemon {
    /// Starts `serve` for `variant` (with `env` added to its environment) with its
    /// stderr in `log` and returns once it printed
    /// its addresses; an error names the variant and quotes the end of its log.
    pub fn start(
        cmd: &ServeCommand,
        variant: &str,
        settings: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> Result<Self> {
        let state = tempfile::Builder::new()
            .prefix(&format!("zkpipe-sweep-{variant}-"))
            .tempdir()
            .context("a state folder for the daemon")?;
        let log_file = std::fs::File::create(log).with_context(|| format!("{}", log.display()))?;
        let mut child = Command::new(&cmd.exe)
            .args(cmd.args(state.path(), settings))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting {}", cmd.exe.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut d = Self {
            variant: variant.into(),
            grpc: String::new(),
            child,
            log: log.into(),
            stopped: false,
            _state: state,
        };
        let why = match first_line(stdout, START_TIMEOUT) {
            FirstLine::Line(line) => match parse_bound(&line) {
                Some((grpc, _http)) => {
                    d.grpc = format!("http://{grpc}");
                    return Ok(d);
                }
                None => format!("its first line is not its addresses: {line:?}"),
            },
            FirstLine::Closed => match d.wait_exit(Duration::from_secs(10)) {
                Some(status) => format!("exited ({status})"),
                None => "closed its stdout".into(),
            },
            FirstLine::Timeout => format!("printed no address in {} s", START_TIMEOUT.as_secs()),
        };
        d.kill();
        Err(anyhow!(
            "the daemon of variant {variant} failed to start: {why}; {}",
            log_tail(&d.log)
        ))
    }

    /// Waits up to `timeout` for it to exit.
    fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.stopped = true;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// If it has exited: how, and the end of its log (for an error about a failed cell).
    pub fn exit_note(&mut self) -> Option<String> {
        let status = self.child.try_wait().ok()??;
        Some(format!(
            "the daemon of variant {} exited ({status}); {}",
            self.variant,
            log_tail(&self.log)
        ))
    }

    /// Stops it: SIGTERM, then waits for it to exit ([`STOP_TIMEOUT`] at most, then kills it).
    pub fn stop(&mut self) -> Result<ExitStatus> {
        if let Some(status) = self.wait_exit(Duration::ZERO) {
            return Ok(status);
        }
        let signalled = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let grace = if signalled {
            STOP_TIMEOUT
        } else {
            Duration::ZERO
        };
        if let Some(status) = self.wait_exit(grace) {
            return Ok(status);
        }
        self.kill();
        Err(anyhow!(
            "the daemon of variant {} did not stop on SIGTERM in {} s: killed",
            self.variant,
            STOP_TIMEOUT.as_secs()
        ))
    }

    /// Kills it and waits for it.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stopped = true;
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if !self.stopped {
            self.kill();
        }
    }
}

/// What a starting daemon printed first.
enum FirstLine {
    /// Its first line.
    Line(String),
    /// Nothing: it closed its stdout (it exited).
    Closed,
    /// Nothing in time.
    Timeout,
}

/// The first line of a child's stdout, waiting `timeout` at most; the rest is read and
/// dropped (so that the child never blocks on a full pipe) until the child exits.
fn first_line(stdout: std::process::ChildStdout, timeout: Duration) -> FirstLine {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let _ = tx.send(lines.next().and_then(Result::ok));
        for _ in lines.map_while(Result::ok) {}
    });
    match rx.recv_timeout(timeout) {
        Ok(Some(line)) => FirstLine::Line(line),
        Ok(None) => FirstLine::Closed,
        Err(_) => FirstLine::Timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_arguments_carry_one_set_per_setting() {
        let cmd = ServeCommand {
            exe: "zkpipe".into(),
            config: Some("z.toml".into()),
            backend: "cpu".into(),
        };
        let args = |settings: &[String]| -> Vec<String> {
            cmd.args(Path::new("/tmp/s"), settings)
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect()
        };
        let plain = args(&[]);
        assert_eq!(
            plain,
            [
                "serve",
                "--config",
                "z.toml",
                "--backend",
                "cpu",
                "--grpc-listen",
                "127.0.0.1:0",
                "--http-listen",
                "127.0.0.1:0",
                "--state-dir",
                "/tmp/s"
            ]
        );
        let set = args(&["reduce.workers=4".into(), "device.passes=2".into()]);
        assert_eq!(
            set[plain.len()..],
            ["--set", "reduce.workers=4", "--set", "device.passes=2"]
        );
    }

    #[test]
    fn the_first_line_gives_the_addresses() {
        assert_eq!(
            parse_bound("zkpipe: serving grpc=127.0.0.1:4000 http=127.0.0.1:4001"),
            Some(("127.0.0.1:4000".into(), "127.0.0.1:4001".into()))
        );
        assert_eq!(parse_bound("zkpipe: serving grpc=127.0.0.1:4000"), None);
        assert_eq!(parse_bound(""), None);
    }
}
