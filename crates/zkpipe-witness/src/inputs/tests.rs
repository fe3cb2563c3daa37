//! Hand-checked expectations; each was confirmed with node 20 and snarkjs 0.7.6's own
//! functions (`JSON.parse`, ffjavascript's `unstringifyBigInts`, circom_runtime's
//! `flatArray` and `normalize`). `tests/suite/snarkjs_inputs.rs` replays a set of inputs through
//! those functions in node and compares.

use super::*;

fn parse(json: &str) -> Vec<(String, Vec<String>)> {
    Inputs::parse(json)
        .unwrap_or_else(|e| panic!("{json}: {e}"))
        .signals
        .into_iter()
        .map(|(k, v)| (k, v.iter().map(|x| x.to_string()).collect()))
        .collect()
}

fn sig(k: &str, v: &[&str]) -> (String, Vec<String>) {
    (k.to_owned(), v.iter().map(|s| s.to_string()).collect())
}

fn bad(json: &str) -> (Option<String>, String) {
    match Inputs::parse(json) {
        Err(SynthError::BadInput { at, why }) => (at, why),
        other => panic!("{json}: expected BadInput, got {other:?}"),
    }
}

#[test]
fn the_fixture_inputs() {
    let got = parse(
        r#"{"a": "3", "b": "5", "c": "7", "x": "2", "y": "3", "k": ["11", "13", "17", "19"]}"#,
    );
    assert_eq!(
        got,
        [
            sig("a", &["3"]),
            sig("b", &["5"]),
            sig("c", &["7"]),
            sig("x", &["2"]),
            sig("y", &["3"]),
            sig("k", &["11", "13", "17", "19"]),
        ]
    );
}

#[test]
fn every_value_form_bigint_accepts() {
    let got = parse(
        r#"{"dec": "42", "neg": "-5", "plus": "+5", "hex": "0xff", "HEX": "0XFF", "oct": "0o17",
            "bin": "0b101", "blank": " ", "empty": "", "padded": " 12\n", "num": 7, "negnum": -7,
            "exp": 1.5e1, "zero": -0, "big": 1e23, "lost": 9007199254740993, "t": true, "f": false}"#,
    );
    let want = [
        ("dec", "42"),
        ("neg", "-5"),
        ("plus", "5"),
        ("hex", "255"),
        ("HEX", "255"),
        ("oct", "15"),
        ("bin", "5"),
        ("blank", "0"),
        ("empty", "0"),
        ("padded", "12"),
        ("num", "7"),
        ("negnum", "-7"),
        ("exp", "15"),
        ("zero", "0"),
        // The double nearest 1e23, exactly: BigInt(1e23) in node.
        ("big", "99999999999999991611392"),
        // 2^53 + 1 is not a double: JSON.parse already rounded it.
        ("lost", "9007199254740992"),
        ("t", "1"),
        ("f", "0"),
    ];
    assert_eq!(
        got,
        want.iter().map(|(k, v)| sig(k, &[v])).collect::<Vec<_>>()
    );
}

#[test]
fn keys_in_object_keys_order() {
    // Array-index keys first, ascending; a repeated key keeps its place, takes its last value.
    let got = parse(r#"{"b": 1, "10": 2, "2": 3, "a": 4, "b": 5, "02": 6}"#);
    assert_eq!(
        got,
        [
            sig("2", &["3"]),
            sig("10", &["2"]),
            sig("b", &["5"]),
            sig("a", &["4"]),
            sig("02", &["6"]),
        ]
    );
}

#[test]
fn nested_arrays_flatten_in_order() {
    let got = parse(r#"{"m": [["1", 2], [], [[3]], "0x4"], "e": []}"#);
    assert_eq!(got, [sig("m", &["1", "2", "3", "4"]), sig("e", &[])]);
}

#[test]
fn nested_objects_get_qualified_names() {
    // circom's own witness_calculator.js (qualify_input): `s.x`, `s[0].x`.
    let got = parse(
        r#"{"a": 1, "s": {"y": [1, 2], "x": "3", "t": {"u": 4}}, "l": [{"x": 5}, {"x": 6}], "z": 7}"#,
    );
    assert_eq!(
        got,
        [
            sig("a", &["1"]),
            sig("s.y", &["1", "2"]),
            sig("s.x", &["3"]),
            sig("s.t.u", &["4"]),
            sig("l[0].x", &["5"]),
            sig("l[1].x", &["6"]),
            sig("z", &["7"]),
        ]
    );
    let (at, why) = bad(r#"{"l": [{"x": 5}, 6]}"#);
    assert_eq!(at.as_deref(), Some("l"));
    assert!(why.contains("mixes objects and values"), "{why}");
}

#[test]
fn proto_key_disappears_as_in_snarkjs() {
    // unstringifyBigInts copies with `res[k] = v`, which for "__proto__" sets the prototype.
    assert_eq!(parse(r#"{"__proto__": 5, "a": 1}"#), [sig("a", &["1"])]);
}

#[test]
fn values_bigint_refuses_name_the_signal() {
    let cases = [
        (
            r#"{"a": 1.5}"#,
            "a",
            "the number 1.5 cannot be converted to a BigInt because it is not an integer",
        ),
        (
            r#"{"a": 1e400}"#,
            "a",
            "the number 1e400 cannot be converted",
        ),
        (
            r#"{"a": "abc"}"#,
            "a",
            r#"cannot convert "abc" to a BigInt"#,
        ),
        (r#"{"a": "1.0"}"#, "a", "cannot convert \"1.0\" to a BigInt"),
        (r#"{"a": "1e3"}"#, "a", "cannot convert \"1e3\" to a BigInt"),
        (
            r#"{"a": "-0x10"}"#,
            "a",
            "cannot convert \"-0x10\" to a BigInt",
        ),
        (r#"{"a": null}"#, "a", "cannot convert null to a BigInt"),
        (
            r#"{"k": ["1", ["2", "x"]]}"#,
            "k[1][1]",
            "cannot convert \"x\"",
        ),
        (r#"{"s": {"t": [1, null]}}"#, "s.t[1]", "null"),
    ];
    for (json, at, why) in cases {
        let (got_at, got_why) = bad(json);
        assert_eq!(got_at.as_deref(), Some(at), "{json}");
        assert!(
            got_why.contains(why),
            "{json}: {got_why:?} should contain {why:?}"
        );
    }
}

#[test]
fn not_an_object_or_not_json() {
    for (json, why) in [
        ("[1, 2]", "found an array"),
        ("5", "found a number"),
        ("null", "found null"),
        ("\"a\"", "found a string"),
        (
            "{\"a\": 1,}",
            "not valid JSON: expected a string key at line 1 column 9",
        ),
        ("", "not valid JSON: unexpected end of input"),
    ] {
        let (at, got) = bad(json);
        assert_eq!(at, None, "{json}");
        assert!(got.contains(why), "{json}: {got:?} should contain {why:?}");
    }
    // The whole message, as the CLI prints it.
    let e = Inputs::parse(r#"{"a": "x"}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"bad input a: cannot convert "x" to a BigInt"#
    );
    assert!(e.is_bad_input());
}

#[test]
fn normalize_reduces_and_lifts_negatives() {
    let p = BigUint::from(97u32);
    let n = |v: i64| normalize(&BigInt::from(v), &p).to_string();
    assert_eq!(n(5), "5");
    assert_eq!(n(97), "0");
    assert_eq!(n(200), "6");
    assert_eq!(n(-1), "96");
    assert_eq!(n(-97), "0");
    assert_eq!(n(-200), "91");
    assert_eq!(n(0), "0");
}

#[test]
fn counts_values() {
    let i = Inputs::parse(r#"{"a": 1, "k": [1, 2, 3], "e": []}"#).unwrap();
    assert_eq!(i.len(), 4);
    assert!(!i.is_empty());
    assert!(Inputs::parse("{}").unwrap().is_empty());
}
