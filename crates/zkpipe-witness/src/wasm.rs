//! circom's wasm witness generator (`circuit.wasm`, circom 2) on wasmtime, driven the way
//! snarkjs 0.7.6 drives it (circom_runtime 0.1.28's `WitnessCalculatorCircom2`).
//!
//! The module exports its memory and a small ABI; field elements cross it as `n32` 32-bit
//! words, least significant first, through a shared read/write buffer:
//!
//! ```text
//!  init(0)                                   once per witness
//!  per input signal k (fnv-1a 64 of its name, as (hi, lo) u32):
//!    getInputSignalSize(hi, lo)              < 0: "Signal k not found"; != values: wrong count
//!    writeSharedRWMemory(j, word) ×n32; setInputSignal(hi, lo, i)   per value, mod p
//!  getInputSize()                            every input must have been set
//!  getWitness(i); readSharedRWMemory(j) ×n32 per witness value
//! ```
//!
//! The module calls back into `runtime`: `printErrorMessage` and `writeBufferMessage` pull
//! a message out with `getMessageChar`, `showSharedRWMemory` prints a field element (a
//! circom `log()`), `exceptionHandler(code)` aborts with circom's error text.

mod cache;

pub use cache::CACHE_ENV;

use crate::error::SynthError;
use crate::inputs::{normalize, size_error, Inputs};
use num_bigint::BigUint;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use wasmtime::{Caller, Engine, Extern, Instance, InstancePre, Linker, Store, TypedFunc};
use zkpipe_formats::curve::{le_to_decimal, CurveId};
use zkpipe_formats::wtns::Wtns;

/// One engine for the process, as wasmtime recommends: modules compiled with it share its
/// code memory and configuration.
static ENGINE: OnceLock<Engine> = OnceLock::new();

fn engine() -> Result<Engine, SynthError> {
    if let Some(e) = ENGINE.get() {
        return Ok(e.clone());
    }
    let e = Engine::new(&wasmtime::Config::new())
        .map_err(|e| SynthError::Runtime(format!("cannot start wasmtime: {}", one_line(&e))))?;
    Ok(ENGINE.get_or_init(|| e).clone())
}

/// A compiled circom wasm module: compile once per circuit, share across threads.
pub struct WasmCircuit {
    path: PathBuf,
    pre: InstancePre<Host>,
    info: Info,
    /// An instance that only answers `getInputSignalSize`, for [`WasmCircuit::check`]
    /// (made on first use; reading the input table never changes it).
    checker: Arc<Mutex<Option<Live>>>,
}

/// A live instance: its store and its exports.
type Live = (Store<Host>, Exports);

/// What the module says about itself, read once when it is compiled.
#[derive(Debug, Clone, Copy)]
struct Info {
    version: Version,
    curve: CurveId,
    /// 32-bit words per field element.
    n32: usize,
    witness_size: u32,
    input_size: u32,
}

/// circom's compiler version, from `getVersion` / `getMinorVersion` / `getPatchVersion`.
#[derive(Debug, Clone, Copy, Default)]
struct Version {
    major: i32,
    minor: i32,
    patch: i32,
}

impl Version {
    /// circom ≥ 2.0.7 buffers a `log()`'s values into one line; circom_runtime's test,
    /// kept as it is written (`minor >= 1 || patch >= 7`).
    fn buffers_log_values(self) -> bool {
        self.major >= 2 && (self.minor >= 1 || self.patch >= 7)
    }
}

impl WasmCircuit {
    /// Compiles `bytes` (read from `path`, which only names it in errors), then reads the
    /// circuit's version, field and sizes from one instance: a module that is not circom 2's
    /// ABI, or whose field is neither BN254's nor BLS12-381's scalar field, is refused here.
    pub fn compile(path: &Path, bytes: &[u8]) -> Result<Self, SynthError> {
        let refuse = |why: String| SynthError::Generator {
            path: path.to_owned(),
            why,
        };
        let engine = engine()?;
        let module = cache::module(&engine, bytes)
            .map_err(|e| refuse(format!("not a valid wasm module: {}", one_line(&e))))?;
        let mut linker = Linker::new(&engine);
        define_runtime(&mut linker).map_err(|e| SynthError::Runtime(one_line(&e)))?;
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| refuse(format!("not a circom witness generator: {}", one_line(&e))))?;
        let mut store = Store::new(&engine, Host::default());
        let instance = pre
            .instantiate(&mut store)
            .map_err(|e| refuse(format!("cannot instantiate: {}", one_line(&e))))?;
        let info = probe(&instance, &mut store).map_err(refuse)?;
        Ok(Self {
            path: path.to_owned(),
            pre,
            info,
            checker: Arc::default(),
        })
    }

    /// Checks `inputs`' signal names and lengths against the circuit's input table
    /// without computing anything (cheap: a few calls into the module), with the errors
    /// a computation would give. Modules before circom 2.1 have no table: nothing to check.
    pub fn check(&self, inputs: &Inputs) -> Result<(), SynthError> {
        let mut guard = self.checker.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(self.instantiate()?);
        }
        let (store, ex) = guard.as_mut().expect("made above");
        let Some(size) = &ex.get_input_signal_size else {
            return Ok(());
        };
        let size_of = |name: &str| {
            let h = fnv1a(name);
            let s = size
                .call(&mut *store, ((h >> 32) as u32 as i32, h as u32 as i32))
                .map_err(failure)?;
            Ok(usize::try_from(s).ok())
        };
        inputs.check_against(size_of, self.info.input_size as usize)
    }

    /// A fresh instance for one worker.
    pub fn instance(&self) -> Result<WasmInstance, SynthError> {
        let (store, exports) = self.instantiate()?;
        Ok(WasmInstance {
            state: Box::new(InstanceState {
                circuit: self.clone_handle(),
                store,
                exports,
                poisoned: false,
            }),
        })
    }

    /// The curve whose scalar field the circuit is compiled for.
    pub fn curve(&self) -> CurveId {
        self.info.curve
    }

    /// Number of values in a witness (nVars, including the constant 1).
    pub fn witness_size(&self) -> u32 {
        self.info.witness_size
    }

    /// Number of input values the circuit expects, over all input signals.
    pub fn input_size(&self) -> u32 {
        self.info.input_size
    }

    fn clone_handle(&self) -> Self {
        Self {
            path: self.path.clone(),
            pre: self.pre.clone(),
            info: self.info,
            checker: Arc::clone(&self.checker),
        }
    }

    fn instantiate(&self) -> Result<(Store<Host>, Exports), SynthError> {
        let mut store = Store::new(
            self.pre.module().engine(),
            Host {
                version: self.info.version,
                ..Host::default()
            },
        );
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| SynthError::Runtime(format!("cannot instantiate: {}", one_line(&e))))?;
        let exports = Exports::get(&instance, &mut store).map_err(|why| SynthError::Generator {
            path: self.path.clone(),
            why,
        })?;
        Ok((store, exports))
    }
}

/// Reads version, field and sizes, and checks them.
fn probe(instance: &Instance, store: &mut Store<Host>) -> Result<Info, String> {
    let version_of = |store: &mut Store<Host>, name: &str| -> Result<Option<i32>, String> {
        match instance.get_export(&mut *store, name) {
            None => Ok(None),
            Some(_) => {
                let f = instance
                    .get_typed_func::<(), i32>(&mut *store, name)
                    .map_err(|e| format!("export {name}: {}", one_line(&e)))?;
                f.call(&mut *store, ())
                    .map(Some)
                    .map_err(|e| format!("{name} failed: {}", one_line(&e)))
            }
        }
    };
    // Like circom_runtime: no getVersion means circom 1 (whose ABI differs entirely).
    let major = version_of(store, "getVersion")?.unwrap_or(1);
    if major != 2 {
        return Err(format!(
            "unsupported circom version {major} (circom 2 wasm witness generators only)"
        ));
    }
    let version = Version {
        major,
        minor: version_of(store, "getMinorVersion")?.unwrap_or(0),
        patch: version_of(store, "getPatchVersion")?.unwrap_or(0),
    };
    store.data_mut().version = version;
    let ex = Exports::get(instance, store)?;
    let call = |e: wasmtime::Error| format!("the module failed: {}", one_line(&e));
    let n32 = ex.get_field_num_len32.call(&mut *store, ()).map_err(call)?;
    ex.get_raw_prime.call(&mut *store, ()).map_err(call)?;
    let n32 = usize::try_from(n32)
        .ok()
        .filter(|&n| (1..=64).contains(&n))
        .ok_or_else(|| format!("field elements of {n32} 32-bit words"))?;
    let prime = ex.read_words(store, n32).map_err(call)?;
    let curve = CurveId::from_r_le(&prime).ok_or_else(|| {
        format!(
            "the circuit's prime {} is neither BN254's nor BLS12-381's scalar field",
            le_to_decimal(&prime)
        )
    })?;
    let witness_size = ex.get_witness_size.call(&mut *store, ()).map_err(call)?;
    let input_size = ex.get_input_size.call(&mut *store, ()).map_err(call)?;
    Ok(Info {
        version,
        curve,
        n32,
        witness_size: u32::try_from(witness_size)
            .map_err(|_| format!("negative witness size {witness_size}"))?,
        input_size: u32::try_from(input_size)
            .map_err(|_| format!("negative input size {input_size}"))?,
    })
}

/// The module's exports this driver calls.
struct Exports {
    init: TypedFunc<i32, ()>,
    get_field_num_len32: TypedFunc<(), i32>,
    get_raw_prime: TypedFunc<(), ()>,
    get_witness_size: TypedFunc<(), i32>,
    get_input_size: TypedFunc<(), i32>,
    /// Optional, as in circom_runtime (absent before circom 2.1): no size checks then.
    get_input_signal_size: Option<TypedFunc<(i32, i32), i32>>,
    set_input_signal: TypedFunc<(i32, i32, i32), ()>,
    get_witness: TypedFunc<i32, ()>,
    read_shared_rw_memory: TypedFunc<i32, i32>,
    write_shared_rw_memory: TypedFunc<(i32, i32), ()>,
}

impl Exports {
    fn get(instance: &Instance, store: &mut Store<Host>) -> Result<Self, String> {
        macro_rules! func {
            ($name:literal) => {
                instance.get_typed_func(&mut *store, $name).map_err(|e| {
                    format!(
                        "not a circom witness generator: export {}: {}",
                        $name,
                        one_line(&e)
                    )
                })?
            };
        }
        let get_input_signal_size = match instance.get_export(&mut *store, "getInputSignalSize") {
            Some(_) => Some(func!("getInputSignalSize")),
            None => None,
        };
        Ok(Self {
            init: func!("init"),
            get_field_num_len32: func!("getFieldNumLen32"),
            get_raw_prime: func!("getRawPrime"),
            get_witness_size: func!("getWitnessSize"),
            get_input_size: func!("getInputSize"),
            get_input_signal_size,
            set_input_signal: func!("setInputSignal"),
            get_witness: func!("getWitness"),
            read_shared_rw_memory: func!("readSharedRWMemory"),
            write_shared_rw_memory: func!("writeSharedRWMemory"),
        })
    }

    /// The shared buffer's `n32` words as little-endian bytes.
    fn read_words(&self, store: &mut Store<Host>, n32: usize) -> wasmtime::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(n32 * 4);
        for j in 0..n32 {
            let w = self.read_shared_rw_memory.call(&mut *store, j as i32)?;
            out.extend_from_slice(&(w as u32).to_le_bytes());
        }
        Ok(out)
    }
}

/// One instance of a [`WasmCircuit`]; computes one witness at a time, reusable.
pub struct WasmInstance {
    /// Boxed: the exports' handles are large, and a `Worker` is moved around.
    state: Box<InstanceState>,
}

struct InstanceState {
    circuit: WasmCircuit,
    store: Store<Host>,
    exports: Exports,
    /// A failed witness may leave the module's memory half-written: start afresh.
    poisoned: bool,
}

impl WasmInstance {
    /// Computes the witness for `inputs`; circom `log()` lines go to `log`, as they come.
    pub fn calculate(
        &mut self,
        inputs: &Inputs,
        log: &mut dyn FnMut(&str),
    ) -> Result<Wtns, SynthError> {
        self.state.calculate(inputs, log)
    }
}

impl InstanceState {
    fn calculate(
        &mut self,
        inputs: &Inputs,
        log: &mut dyn FnMut(&str),
    ) -> Result<Wtns, SynthError> {
        if self.poisoned {
            (self.store, self.exports) = self.circuit.instantiate()?;
            self.poisoned = false;
        }
        *self.store.data_mut() = Host {
            version: self.circuit.info.version,
            ..Host::default()
        };
        let result = self.run(inputs, log);
        flush(&mut self.store, log);
        self.poisoned = result.is_err();
        result
    }

    fn run(&mut self, inputs: &Inputs, log: &mut dyn FnMut(&str)) -> Result<Wtns, SynthError> {
        let info = self.circuit.info;
        let prime = BigUint::from_bytes_le(&info.curve.r_le());
        let (store, ex) = (&mut self.store, &self.exports);
        ex.init.call(&mut *store, 0).map_err(failure)?;
        let mut set = 0u64;
        for (name, values) in &inputs.signals {
            let h = fnv1a(name);
            let (hi, lo) = ((h >> 32) as u32 as i32, h as u32 as i32);
            if let Some(size) = &ex.get_input_signal_size {
                let size = size.call(&mut *store, (hi, lo)).map_err(failure)?;
                if let Some(e) = size_error(name, values.len(), usize::try_from(size).ok()) {
                    return Err(e);
                }
            }
            for (i, v) in values.iter().enumerate() {
                let mut words = normalize(v, &prime).to_u32_digits();
                words.resize(info.n32, 0);
                for (j, w) in words.iter().enumerate() {
                    ex.write_shared_rw_memory
                        .call(&mut *store, (j as i32, *w as i32))
                        .map_err(failure)?;
                }
                ex.set_input_signal
                    .call(&mut *store, (hi, lo, i as i32))
                    .map_err(failure)?;
                set += 1;
                flush(store, log);
            }
        }
        let expected = ex.get_input_size.call(&mut *store, ()).map_err(failure)?;
        if set < expected.max(0) as u64 {
            return Err(SynthError::Signal(format!(
                "Not all inputs have been set. Only {set} out of {expected}"
            )));
        }
        let n = info.witness_size;
        let mut values = Vec::with_capacity(n as usize * info.n32 * 4);
        for i in 0..n {
            ex.get_witness
                .call(&mut *store, i as i32)
                .map_err(failure)?;
            values.extend(ex.read_words(store, info.n32).map_err(failure)?);
        }
        Ok(Wtns {
            curve: info.curve,
            n_witness: n,
            values,
        })
    }
}

/// Hands the completed `log()` lines to `log`.
fn flush(store: &mut Store<Host>, log: &mut dyn FnMut(&str)) {
    for line in std::mem::take(&mut store.data_mut().lines) {
        log(&line);
    }
}

/// circom's name hash: 64-bit FNV-1a over the name's UTF-16 code units (JavaScript's
/// `charCodeAt`).
fn fnv1a(name: &str) -> u64 {
    name.encode_utf16().fold(0xcbf2_9ce4_8422_2325, |h, c| {
        (h ^ c as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// What the `runtime` imports keep between calls (circom_runtime's closure variables).
#[derive(Default)]
struct Host {
    version: Version,
    /// `msgStr`: the `log()` line being built.
    message: String,
    /// `errStr`: lines from `printErrorMessage`, reported by `exceptionHandler`.
    errors: String,
    /// Completed `log()` lines not yet handed out.
    lines: Vec<String>,
}

/// `exceptionHandler(code)`: circom aborts the witness with this.
#[derive(Debug)]
struct CircomException {
    code: i32,
    /// What `printErrorMessage` collected (template and line).
    errors: String,
}

impl std::fmt::Display for CircomException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "circom exception {}: {}", self.code, self.errors.trim())
    }
}

impl std::error::Error for CircomException {}

/// A module's `getMessageChar` strings are short; a longer one is a broken module.
const MAX_MESSAGE: usize = 1 << 20;

fn define_runtime(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "runtime",
        "exceptionHandler",
        |mut caller: Caller<'_, Host>, code: i32| -> wasmtime::Result<()> {
            let errors = std::mem::take(&mut caller.data_mut().errors);
            Err(wasmtime::Error::new(CircomException { code, errors }))
        },
    )?;
    linker.func_wrap(
        "runtime",
        "printErrorMessage",
        |mut caller: Caller<'_, Host>| -> wasmtime::Result<()> {
            let m = get_message(&mut caller)?;
            let errors = &mut caller.data_mut().errors;
            errors.push_str(&m);
            errors.push('\n');
            Ok(())
        },
    )?;
    linker.func_wrap(
        "runtime",
        "writeBufferMessage",
        |mut caller: Caller<'_, Host>| -> wasmtime::Result<()> {
            let m = get_message(&mut caller)?;
            let host = caller.data_mut();
            // Every log() ends with "\n": that is when the line is printed.
            if m == "\n" {
                let line = std::mem::take(&mut host.message);
                host.lines.push(line);
            } else {
                if !host.message.is_empty() {
                    host.message.push(' ');
                }
                host.message.push_str(&m);
            }
            Ok(())
        },
    )?;
    linker.func_wrap(
        "runtime",
        "showSharedRWMemory",
        |mut caller: Caller<'_, Host>| -> wasmtime::Result<()> {
            let n32 = export::<(), i32>(&mut caller, "getFieldNumLen32")?.call(&mut caller, ())?;
            let read = export::<i32, i32>(&mut caller, "readSharedRWMemory")?;
            let mut words = Vec::with_capacity(n32.max(0) as usize);
            for j in 0..n32.clamp(0, 64) {
                words.push(read.call(&mut caller, j)? as u32);
            }
            let value = BigUint::from_slice(&words).to_string();
            let host = caller.data_mut();
            if host.version.buffers_log_values() {
                if !host.message.is_empty() {
                    host.message.push(' ');
                }
                host.message.push_str(&value);
            } else {
                host.lines.push(value);
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// An export of the calling instance, typed.
fn export<P: wasmtime::WasmParams, R: wasmtime::WasmResults>(
    caller: &mut Caller<'_, Host>,
    name: &str,
) -> wasmtime::Result<TypedFunc<P, R>> {
    let f = caller
        .get_export(name)
        .and_then(Extern::into_func)
        .ok_or_else(|| wasmtime::Error::msg(format!("the module has no {name} export")))?;
    f.typed::<P, R>(&*caller)
}

/// circom_runtime's `getMessage`: `getMessageChar` until 0, each a UTF-16 code unit.
fn get_message(caller: &mut Caller<'_, Host>) -> wasmtime::Result<String> {
    let next = export::<(), i32>(caller, "getMessageChar")?;
    let mut units = Vec::new();
    loop {
        let c = next.call(&mut *caller, ())?;
        if c == 0 {
            break;
        }
        if units.len() == MAX_MESSAGE {
            return Err(wasmtime::Error::msg("a message longer than 1 MiB"));
        }
        units.push(c as u16); // String.fromCharCode takes the low 16 bits
    }
    Ok(String::from_utf16_lossy(&units))
}

/// What a failed call into the module means for the caller.
fn failure(e: wasmtime::Error) -> SynthError {
    if let Some(x) = e.downcast_ref::<CircomException>() {
        // circom_runtime's texts for codes 1–6; 7 is circom ≥ 2.2's own (its js says so).
        let (kind, text): (fn(String) -> SynthError, &str) = match x.code {
            1 => (SynthError::Signal, "Signal not found."),
            2 => (SynthError::Signal, "Too many signals set."),
            3 => (SynthError::Signal, "Signal already set."),
            4 => (SynthError::Circuit, "Assert Failed."),
            5 => (SynthError::Runtime, "Not enough memory."),
            6 => (
                SynthError::Signal,
                "Input signal array access exceeds the size.",
            ),
            7 => (SynthError::Circuit, "Out of bounds array access."),
            _ => (SynthError::Runtime, "Unknown error."),
        };
        let detail: Vec<&str> = x
            .errors
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let mut msg = text.to_owned();
        if !detail.is_empty() {
            msg.push(' ');
            msg.push_str(&detail.join(" "));
        }
        if !(1..=7).contains(&x.code) {
            msg.push_str(&format!(" (exception code {})", x.code));
        }
        return kind(msg);
    }
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        return SynthError::Runtime(format!("the wasm module trapped: {trap}"));
    }
    SynthError::Runtime(one_line(&e))
}

/// An error and its causes on one line.
fn one_line(e: &wasmtime::Error) -> String {
    format!("{e:#}")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
