//! `input.json` read the way snarkjs 0.7.6's `wtns calculate` reads it: `JSON.parse`, then
//! circom_runtime 0.1.28's witness calculator, which takes the keys in `Object.keys` order,
//! flattens nested arrays (`flatArray`) and converts each value with `BigInt(x)` before
//! reducing it modulo the prime (`normalize`, done by the generator, which knows the prime).
//!
//! Values: decimal strings (optionally signed), `0x`/`0o`/`0b` strings, integral JSON
//! numbers (the exact value of the double, so a number past 2^53 has already lost
//! precision, as in JavaScript), booleans (1 and 0), an empty or blank string (0).
//! Refused, naming the signal: a fraction or out-of-range number, a string that is not an
//! integer, `null`.
//!
//! Nested objects, which circom_runtime cannot convert, are flattened to qualified names
//! (`{"s": {"x": 1}}` sets `s.x`, `{"s": [{"x": 1}]}` sets `s[0].x`) the way the
//! `witness_calculator.js` that circom ≥ 2.2 writes beside the wasm does (`qualify_input`),
//! so circuits with bus inputs work. That is the one place zkpipe accepts what snarkjs
//! refuses.

mod js_bigint;
mod json;

use crate::error::SynthError;
use json::Json;
use num_bigint::{BigInt, BigUint, Sign};

/// Circuit inputs: qualified signal names (`a`, `s.x` for nested objects) in snarkjs's
/// order, each with its flattened values as signed integers, not yet reduced modulo the
/// field (the generator knows its prime).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inputs {
    /// (signal name, values) in the order snarkjs sets them.
    pub signals: Vec<(String, Vec<BigInt>)>,
}

impl Inputs {
    /// Parses `input.json` text.
    pub fn parse(json: &str) -> Result<Self, SynthError> {
        let value = json::parse(json).map_err(|e| SynthError::BadInput {
            at: None,
            why: format!("not valid JSON: {e}"),
        })?;
        let Json::Object(members) = value else {
            return Err(SynthError::BadInput {
                at: None,
                why: format!(
                    "expected a JSON object of signal names, found {}",
                    kind(&value)
                ),
            });
        };
        let mut signals = Vec::new();
        for (k, v) in members {
            qualify(k, v, &mut signals)?;
        }
        Ok(Self {
            signals: json::js_key_order(signals),
        })
    }

    /// Number of values over all signals.
    pub fn len(&self) -> usize {
        self.signals.iter().map(|(_, v)| v.len()).sum()
    }

    /// Whether there are no values at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// circom_runtime's `normalize`: `BigInt(n) % prime`, plus `prime` when negative, so
/// −1 is p − 1.
pub fn normalize(value: &BigInt, prime: &BigUint) -> BigUint {
    let p = BigInt::from_biguint(Sign::Plus, prime.clone());
    let mut r = value % &p; // the sign of the dividend, as JavaScript's %
    if r.sign() == Sign::Minus {
        r += &p;
    }
    r.magnitude().clone()
}

/// Adds the signal(s) `v` sets under the name `name` (circom's `qualify_input`).
fn qualify(name: String, v: Json, out: &mut Vec<(String, Vec<BigInt>)>) -> Result<(), SynthError> {
    // snarkjs copies the parsed input with `res[k] = …` (unstringifyBigInts), and assigning
    // `__proto__` sets the prototype instead of a key: the entry disappears.
    if name == "__proto__" || name.ends_with(".__proto__") {
        return Ok(());
    }
    match v {
        Json::Object(members) => {
            for (k, v) in members {
                qualify(format!("{name}.{k}"), v, out)?;
            }
        }
        array @ Json::Array(_) => {
            let (objects, leaves) = {
                let mut leaves = Vec::new();
                flatten(&array, &mut leaves);
                (leaves.iter().filter(|l| is_object(l)).count(), leaves.len())
            };
            if objects > 0 && objects < leaves {
                return Err(SynthError::BadInput {
                    at: Some(name),
                    why: "an array mixes objects and values".into(),
                });
            }
            if objects > 0 {
                qualify_list(name, array, out)?;
            } else {
                let mut values = Vec::with_capacity(leaves);
                collect(&name, &array, &mut values)?;
                json::insert(out, name, values);
            }
        }
        scalar => {
            let value = to_bigint(&name, &scalar)?;
            json::insert(out, name, vec![value]);
        }
    }
    Ok(())
}

/// An array whose leaves are objects: each element gets its index in the name.
fn qualify_list(
    name: String,
    v: Json,
    out: &mut Vec<(String, Vec<BigInt>)>,
) -> Result<(), SynthError> {
    match v {
        Json::Array(items) => {
            for (i, item) in items.into_iter().enumerate() {
                qualify_list(format!("{name}[{i}]"), item, out)?;
            }
            Ok(())
        }
        other => qualify(name, other, out),
    }
}

/// Whether a leaf is what JavaScript's `typeof` calls an object (an object or null).
fn is_object(v: &Json) -> bool {
    matches!(v, Json::Object(_))
}

/// The leaves of nested arrays in order (`flatArray`; empty arrays add nothing).
fn flatten<'a>(v: &'a Json, out: &mut Vec<&'a Json>) {
    match v {
        Json::Array(items) => items.iter().for_each(|i| flatten(i, out)),
        leaf => out.push(leaf),
    }
}

/// The values of nested arrays of scalars, converted; an error names the element
/// (`k[1][0]`).
fn collect(at: &str, v: &Json, out: &mut Vec<BigInt>) -> Result<(), SynthError> {
    match v {
        Json::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if matches!(item, Json::Array(_)) {
                    collect(&format!("{at}[{i}]"), item, out)?;
                } else {
                    out.push(to_bigint(&format!("{at}[{i}]"), item)?);
                }
            }
            Ok(())
        }
        scalar => {
            out.push(to_bigint(at, scalar)?);
            Ok(())
        }
    }
}

/// `BigInt(x)`, with JavaScript's reasons when it throws.
fn to_bigint(at: &str, v: &Json) -> Result<BigInt, SynthError> {
    let bad = |why: String| SynthError::BadInput {
        at: Some(at.to_owned()),
        why,
    };
    match v {
        Json::Bool(b) => Ok(BigInt::from(*b as u8)),
        Json::Number(x, text) => js_bigint::from_f64(*x).ok_or_else(|| {
            bad(format!(
                "the number {text} cannot be converted to a BigInt because it is not an integer"
            ))
        }),
        Json::String(s) => js_bigint::from_string(s)
            .ok_or_else(|| bad(format!("cannot convert {s:?} to a BigInt"))),
        Json::Null => Err(bad("cannot convert null to a BigInt".into())),
        Json::Array(_) | Json::Object(_) => {
            Err(bad(format!("expected a number, found {}", kind(v))))
        }
    }
}

/// What a JSON value is, for messages.
fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(..) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;

impl Inputs {
    /// Checks the signals against a circuit's input table before anything is computed:
    /// `size_of(name)` is the number of values input signal `name` takes (`None`: the
    /// circuit has no such input), `expected` the number of input values over all
    /// signals. The errors are circom_runtime's, in its words, naming the signal.
    pub fn check_against(
        &self,
        mut size_of: impl FnMut(&str) -> Result<Option<usize>, SynthError>,
        expected: usize,
    ) -> Result<(), SynthError> {
        for (name, values) in &self.signals {
            let size = size_of(name)?;
            if let Some(e) = size_error(name, values.len(), size) {
                return Err(e);
            }
        }
        let set = self.len();
        if set < expected {
            return Err(SynthError::Signal(format!(
                "Not all inputs have been set. Only {set} out of {expected}"
            )));
        }
        Ok(())
    }
}

/// What is wrong with giving `n` values to input signal `name` of size `size` (`None`:
/// no such input), in circom_runtime's words without their trailing newline.
pub(crate) fn size_error(name: &str, n: usize, size: Option<usize>) -> Option<SynthError> {
    let why = match size {
        None => format!("Signal {name} not found"),
        Some(s) if n < s => format!("Not enough values for input signal {name}"),
        Some(s) if n > s => format!("Too many values for input signal {name}"),
        Some(_) => return None,
    };
    Some(SynthError::Signal(why))
}
