//! circom's native witness generator (`circom --c`, built with its Makefile), run as a
//! subprocess.
//!
//! Why a subprocess: the generator is a C++ program with its own `main` (`<generator>
//! input.json out.wtns`) that `abort()`s on a failed `assert` or an input it does not
//! like. Loaded into our process it would take the daemon down with it; as a child it
//! costs a fork/exec and two small files in a private temp dir per witness.
//!
//! What circom 2.2's generated `main.cpp` / `calcwit.cpp` do, and what follows here:
//! - It opens `<argv[0]>.dat`. We run it by the absolute path it was opened by (symlinks
//!   not resolved), so the `.dat` that [`NativeGenerator::open`] checked is the one it
//!   reads; through a symlink that is `<link>.dat`, not the `.dat` beside the target.
//! - Input values are decimal, `0x`/`0o`/`0b` strings or JSON numbers; a minus sign is
//!   rejected ("Invalid number in JSON input"), values ≥ p are reduced by GMP. snarkjs
//!   reduces every value to `((v mod p) + p) mod p`, so we do the same before writing
//!   decimal strings, which needs p before the first run: it is in the executable (fr.asm's
//!   `Fr_rawq`), where [`NativeGenerator::open`] looks for BN254's or BLS12-381's.
//! - Nested arrays are flattened per signal and `a.b` keys name the same signal as nested
//!   objects, so the flat `(name, values)` pairs of [`Inputs`] are written as they are.
//! - `log()` and failed-assert messages go to stdout, runtime errors to stderr, followed by
//!   `abort()` (C `assert` or an uncaught `std::runtime_error`).

use crate::error::SynthError;
use crate::inputs::Inputs;
use num_bigint::{BigInt, Sign};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use zkpipe_formats::curve::CurveId;
use zkpipe_formats::wtns::Wtns;

/// stdout line circom's generated code prints before a failed `assert` / `===` aborts.
const FAILED_ASSERT: &str = "Failed assert in template/function ";
/// stdout line of `loadCircuit` when `<argv[0]>.dat` cannot be opened.
const DAT_NOT_FOUND: &str = ".dat file not found";
/// stderr lines of `calcwit.cpp`/`main.cpp` (each followed by `assert(false)`) that mean the
/// inputs do not fit the circuit's input signals.
const SIGNAL_ERRORS: [&str; 5] = [
    "Not all inputs have been set",
    "Input signal array access exceeds the size",
    "Signal assigned twice",
    "No more signals to be assigned",
    "Types are not the same in the key",
];
/// How much of the child's stderr is kept for the error message.
const STDERR_LIMIT: u64 = 64 << 10;

/// A native generator executable (with its `.dat` beside it).
#[derive(Debug, Clone)]
pub struct NativeGenerator {
    /// The executable, absolute, symlinks not resolved: circom's main reads
    /// `<argv[0]>.dat`, and this is its `argv[0]`.
    pub path: PathBuf,
    /// Whose scalar field the generator computes in.
    curve: CurveId,
    /// The circuit's input table from its `.dat`: fnv-1a hash of a name → its size.
    inputs: Arc<HashMap<u64, usize>>,
}

impl NativeGenerator {
    /// Checks that `path` is a native generator this machine can run: an ELF executable
    /// for this architecture, with `<path>.dat` beside it, computing in BN254's or
    /// BLS12-381's scalar field.
    pub fn open(path: &Path) -> Result<Self, SynthError> {
        let bad = |why: String| SynthError::Generator {
            path: path.to_owned(),
            why,
        };
        let exe = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        check_elf(&exe).map_err(bad)?;
        check_executable(path).map_err(bad)?;
        let dat = dat_path(path);
        if !dat.is_file() {
            return Err(bad(format!(
                "{} is missing: circom's native generator reads <itself>.dat",
                dat.display()
            )));
        }
        let curve = field_of(&exe).ok_or_else(|| {
            bad(
                "neither BN254's nor BLS12-381's scalar field prime is in it: \
                 not a circom native generator for a curve zkpipe proves"
                    .into(),
            )
        })?;
        let path = std::path::absolute(path).map_err(|e| bad(format!("{e}")))?;
        let table = std::fs::read(&dat).map_err(|e| bad(format!("{}: {e}", dat.display())))?;
        let inputs = Arc::new(input_table(&table).ok_or_else(|| {
            bad(format!(
                "{} is too short for circom's input table",
                dat.display()
            ))
        })?);
        Ok(Self {
            path,
            curve,
            inputs,
        })
    }

    /// Checks `inputs`' signal names and lengths against the circuit's input table (from
    /// its `.dat`) without running it, with the errors a computation would give.
    pub fn check(&self, inputs: &Inputs) -> Result<(), SynthError> {
        let expected = self.inputs.values().sum();
        inputs.check_against(|name| Ok(self.inputs.get(&fnv1a(name)).copied()), expected)
    }

    /// The curve whose scalar field the generator computes in.
    pub fn curve(&self) -> CurveId {
        self.curve
    }

    /// Runs the generator on `inputs`; its `log()` lines go to `log`.
    pub fn calculate(
        &self,
        inputs: &Inputs,
        log: &mut dyn FnMut(&str),
    ) -> Result<Wtns, SynthError> {
        let io_err = |what: &str, e: io::Error| SynthError::Runtime(format!("{what}: {e}"));
        // A private directory per call: concurrent calls (cloned generators on several
        // workers) never share a file.
        let dir = tempfile::Builder::new()
            .prefix("zkpipe-native-")
            .tempdir()
            .map_err(|e| io_err("cannot create a temp dir", e))?;
        let input = dir.path().join("input.json");
        let output = dir.path().join("witness.wtns");
        std::fs::write(&input, input_json(inputs, self.curve))
            .map_err(|e| io_err("cannot write input.json", e))?;

        let mut child = Command::new(&self.path)
            .arg(&input)
            .arg(&output)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| io_err(&format!("cannot start {}", self.path.display()), e))?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(SynthError::Runtime(
                "child without stdout/stderr pipes".into(),
            ));
        };
        // stderr on a thread of its own, so a chatty child never blocks on a full pipe.
        let (out_errors, stderr, status) = std::thread::scope(|s| {
            let err = s.spawn(|| read_capped(stderr));
            let out_errors = forward_stdout(stdout, log);
            let stderr = err.join().unwrap_or_default();
            (out_errors, stderr, child.wait())
        });
        let status = status.map_err(|e| io_err("waiting for the generator", e))?;
        if !status.success() {
            return Err(self.failure(status, &out_errors, &stderr, inputs));
        }
        let bytes = std::fs::read(&output)
            .map_err(|e| io_err("the generator exited 0 but its witness is unreadable", e))?;
        let wtns = Wtns::parse(&bytes)
            .map_err(|e| SynthError::Runtime(format!("the generator wrote a bad .wtns: {e}")))?;
        if wtns.curve != self.curve {
            return Err(SynthError::Runtime(format!(
                "the generator wrote a {} witness, its executable holds {}'s prime",
                wtns.curve, self.curve
            )));
        }
        Ok(wtns)
    }

    /// Turns a failed run into one error line: circom's own message where it printed one.
    fn failure(
        &self,
        status: ExitStatus,
        out_errors: &[String],
        stderr: &str,
        inputs: &Inputs,
    ) -> SynthError {
        if let Some(l) = out_errors.iter().find(|l| l.starts_with(FAILED_ASSERT)) {
            return SynthError::Circuit(l.clone());
        }
        // main.cpp's ".dat file not found" line is usually lost (unflushed when the
        // exception aborts), so look for the .dat ourselves.
        let dat = dat_path(&self.path);
        if !dat.is_file() {
            return SynthError::Generator {
                path: self.path.clone(),
                why: format!("{} is missing (removed after open?)", dat.display()),
            };
        }
        if let Some(l) = out_errors.iter().find(|l| l.starts_with(DAT_NOT_FOUND)) {
            return SynthError::Generator {
                path: self.path.clone(),
                why: l.clone(),
            };
        }
        match classify_stderr(stderr) {
            StderrKind::UnknownSignal(msg) => {
                let unknown = self.unknown_signals(inputs);
                match unknown.as_slice() {
                    [] => SynthError::Signal(msg),
                    [one] => SynthError::Signal(format!("Signal {one} not found in the circuit")),
                    many => SynthError::Signal(format!(
                        "Signals {} not found in the circuit",
                        many.join(", ")
                    )),
                }
            }
            StderrKind::Signal(msg) => SynthError::Signal(msg),
            StderrKind::Other(msg) => SynthError::Runtime(format!("{}{msg}", describe(status))),
        }
    }

    /// The input names circom's native generator does not know. It says only "Signal not
    /// found"; its `.dat` starts with the input hash table (`{u64 fnv1a(name), u64 id,
    /// u64 size}` entries), so a name whose hash is not in it is unknown (a 64-bit hash
    /// turning up elsewhere in the file by chance is not a practical concern).
    fn unknown_signals(&self, inputs: &Inputs) -> Vec<String> {
        let Ok(dat) = std::fs::read(dat_path(&self.path)) else {
            return Vec::new();
        };
        let present = |h: u64| dat.chunks_exact(8).any(|c| c == h.to_le_bytes().as_slice());
        inputs
            .signals
            .iter()
            .filter(|(name, _)| !present(fnv1a(name)))
            .map(|(name, _)| name.clone())
            .collect()
    }
}

/// Entries of the input hash table at the start of a native generator's `.dat`: circom's
/// C++ generator always writes 256 (`get_size_of_input_hashmap() {return 256;}`), each
/// `{u64 fnv1a(name), u64 first signal id, u64 size}`, empty ones all zero.
const INPUT_TABLE_ENTRIES: usize = 256;

/// The input table of a `.dat` (name hash → size); `None` if it is too short.
fn input_table(dat: &[u8]) -> Option<HashMap<u64, usize>> {
    let table = dat.get(..INPUT_TABLE_ENTRIES * 24)?;
    let u64_at = |e: &[u8], i: usize| u64::from_le_bytes(e[i * 8..i * 8 + 8].try_into().unwrap());
    Some(
        table
            .chunks_exact(24)
            .filter(|e| u64_at(e, 0) != 0)
            .map(|e| (u64_at(e, 0), u64_at(e, 2) as usize))
            .collect(),
    )
}

/// `<path>.dat`, the name circom's main derives from its `argv[0]`.
fn dat_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".dat");
    PathBuf::from(s)
}

/// An ELF executable (or PIE) for the architecture we run on.
fn check_elf(exe: &[u8]) -> Result<(), String> {
    if exe.len() < 20 || &exe[..4] != b"\x7fELF" {
        return Err("not an ELF executable (circom's native witness generator)".into());
    }
    let e_type = u16::from_le_bytes([exe[16], exe[17]]);
    if exe[4] != 2 || exe[5] != 1 || !(e_type == 2 || e_type == 3) {
        return Err("not a 64-bit little-endian ELF executable".into());
    }
    let e_machine = u16::from_le_bytes([exe[18], exe[19]]);
    let ours: Option<u16> = if cfg!(target_arch = "x86_64") {
        Some(62)
    } else if cfg!(target_arch = "aarch64") {
        Some(183)
    } else {
        None
    };
    match ours {
        Some(m) if m != e_machine => Err(format!(
            "built for another architecture (ELF machine {e_machine}, this machine runs {m})"
        )),
        _ => Ok(()),
    }
}

#[cfg(unix)]
fn check_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| e.to_string())?
        .permissions()
        .mode();
    if mode & 0o111 == 0 {
        return Err("not executable (chmod +x)".into());
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_executable(_path: &Path) -> Result<(), String> {
    Ok(())
}

/// The curve whose scalar-field prime the executable holds (fr.asm's `Fr_rawq`, raw
/// little-endian limbs), if exactly one.
fn field_of(exe: &[u8]) -> Option<CurveId> {
    let mut found = CurveId::ALL.into_iter().filter(|c| {
        let r = c.r_le();
        exe.windows(r.len()).any(|w| w == r.as_slice())
    });
    match (found.next(), found.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    }
}

/// The inputs as circom's native main reads them: `{"name": ["decimal", ...], ...}`, each
/// value reduced into [0, p) as snarkjs does.
fn input_json(inputs: &Inputs, curve: CurveId) -> String {
    let p = BigInt::from_bytes_le(Sign::Plus, &curve.r_le());
    let mut s = String::from("{");
    for (i, (name, values)) in inputs.signals.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&serde_json::Value::String(name.clone()).to_string());
        s.push_str(":[");
        for (j, v) in values.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let r = v % &p;
            let r = if r.sign() == Sign::Minus { r + &p } else { r };
            s.push('"');
            s.push_str(&r.to_str_radix(10));
            s.push('"');
        }
        s.push(']');
    }
    s.push('}');
    s
}

/// circom's `fnv1a` over a signal name (`calcwit.cpp`; `char` is signed there, so bytes
/// ≥ 0x80 are sign-extended before the xor).
fn fnv1a(name: &str) -> u64 {
    name.bytes().fold(0xCBF2_9CE4_8422_2325, |h, b| {
        (h ^ (b as i8 as i64 as u64)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// Sends the child's stdout to `log` line by line as it comes, except the lines that are
/// circom's error messages (a failed assert, a missing `.dat`): those are returned.
fn forward_stdout(stdout: impl Read, log: &mut dyn FnMut(&str)) -> Vec<String> {
    let mut errors = Vec::new();
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        if line.starts_with(FAILED_ASSERT) || line.starts_with(DAT_NOT_FOUND) {
            errors.push(line.trim().to_owned());
        } else {
            log(line);
        }
    }
    errors
}

/// Up to [`STDERR_LIMIT`] bytes of `r`, the rest read and dropped (so the child never
/// blocks on a full pipe).
fn read_capped(mut r: impl Read) -> String {
    let mut buf = Vec::new();
    let _ = (&mut r).take(STDERR_LIMIT).read_to_end(&mut buf);
    let _ = io::copy(&mut r, &mut io::sink());
    String::from_utf8_lossy(&buf).into_owned()
}

/// What the child's stderr says went wrong.
#[derive(Debug, PartialEq, Eq)]
enum StderrKind {
    /// "Signal not found": an input name the circuit does not have (unnamed by circom).
    UnknownSignal(String),
    /// The inputs do not fit the input signals; circom's line.
    Signal(String),
    /// Anything else: ": <last meaningful line>", or empty.
    Other(String),
}

fn classify_stderr(stderr: &str) -> StderrKind {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // An uncaught std::runtime_error: "terminate called after throwing ...", then
    // "what():  Error loading signal k: Not enough values".
    if let Some(what) = lines.iter().find_map(|l| l.strip_prefix("what():")) {
        let what = what.trim();
        if what.starts_with("Error loading signal") || what.starts_with("Error setting signal") {
            return StderrKind::Signal(what.to_owned());
        }
        return StderrKind::Other(format!(": {what}"));
    }
    if let Some(l) = lines
        .iter()
        .find(|l| **l == "Signal not found" || **l == "Signals not found")
    {
        return StderrKind::UnknownSignal((*l).to_owned());
    }
    if let Some(l) = lines
        .iter()
        .find(|l| SIGNAL_ERRORS.iter().any(|m| l.starts_with(m)))
    {
        return StderrKind::Signal((*l).to_owned());
    }
    StderrKind::Other(lines.last().map(|l| format!(": {l}")).unwrap_or_default())
}

/// "killed by signal 11" / "exited with status 2".
fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("native generator killed by signal {sig}");
        }
    }
    match status.code() {
        Some(code) => format!("native generator exited with status {code}"),
        None => format!("native generator failed ({status})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // stderr as circom 2.2.3's native generator prints it (captured from a test circuit).
    const WRONG_LENGTH: &str = "terminate called after throwing an instance of \
        'std::runtime_error'\n  what():  Error loading signal y: Not enough values\n\n";
    const UNKNOWN: &str = "Signal not found\na: calcwit.cpp:61: uint \
        Circom_CalcWit::getInputSignalHashPosition(u64): Assertion `false' failed.\n";
    const UNSET: &str = "Not all inputs have been set. Only 2 out of 3\na: main.cpp:354: \
        int main(int, char**): Assertion `false' failed.\n";

    #[test]
    fn classifies_circom_stderr() {
        assert_eq!(
            classify_stderr(WRONG_LENGTH),
            StderrKind::Signal("Error loading signal y: Not enough values".into())
        );
        assert_eq!(
            classify_stderr(UNKNOWN),
            StderrKind::UnknownSignal("Signal not found".into())
        );
        assert_eq!(
            classify_stderr(UNSET),
            StderrKind::Signal("Not all inputs have been set. Only 2 out of 3".into())
        );
        assert_eq!(
            classify_stderr("Segmentation fault\n"),
            StderrKind::Other(": Segmentation fault".into())
        );
        assert_eq!(classify_stderr(""), StderrKind::Other(String::new()));
    }

    #[test]
    fn stdout_logs_pass_and_assert_messages_are_kept() {
        let out = "x is 500 3\n4\nFailed assert in template/function A line 8. \
                   Followed trace of components: main\n";
        let mut logged = Vec::new();
        let errors = forward_stdout(out.as_bytes(), &mut |l| logged.push(l.to_owned()));
        assert_eq!(logged, ["x is 500 3", "4"]);
        assert_eq!(
            errors,
            ["Failed assert in template/function A line 8. Followed trace of components: main"]
        );
    }

    #[test]
    fn inputs_are_reduced_like_snarkjs() {
        let c = CurveId::Bn254;
        let p = BigInt::from_bytes_le(Sign::Plus, &c.r_le());
        let inputs = Inputs {
            signals: vec![
                ("a".into(), vec![BigInt::from(5)]),
                (
                    "s.k".into(),
                    vec![BigInt::from(-1), &p + 7, p.clone(), BigInt::from(0)],
                ),
            ],
        };
        let pm1 = (&p - BigInt::from(1)).to_str_radix(10);
        assert_eq!(
            input_json(&inputs, c),
            format!(r#"{{"a":["5"],"s.k":["{pm1}","7","0","0"]}}"#)
        );
    }

    #[test]
    fn fnv1a_matches_circom() {
        // FNV-1a 64 of "" and "a" (standard test vectors).
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn rejects_non_elf() {
        assert!(check_elf(b"\0asm\x01\0\0\0 and more bytes..").is_err());
        assert!(check_elf(b"\x7fELF").is_err());
    }
}
