//! JavaScript's `BigInt(x)` for the values `JSON.parse` produces: what circom_runtime's
//! `normalize` calls on each input value before reducing it modulo the prime.

use num_bigint::{BigInt, Sign};

/// `BigInt(string)`: JavaScript whitespace trimmed; empty is 0; then `0x`/`0o`/`0b`
/// (either case, no sign) or an optionally signed decimal. No `_`, `.` or exponent.
pub(crate) fn from_string(s: &str) -> Option<BigInt> {
    let s = s.trim_matches(is_js_whitespace);
    if s.is_empty() {
        return Some(BigInt::ZERO);
    }
    let b = s.as_bytes();
    if b.len() > 2 && b[0] == b'0' {
        let radix = match b[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 10,
        };
        if radix != 10 {
            return BigInt::parse_bytes(&b[2..], radix).filter(|_| only_digits(&b[2..], radix));
        }
    }
    let (sign, digits) = match b[0] {
        b'-' => (Sign::Minus, &b[1..]),
        b'+' => (Sign::Plus, &b[1..]),
        _ => (Sign::Plus, b),
    };
    if digits.is_empty() || !only_digits(digits, 10) {
        return None;
    }
    let v = BigInt::parse_bytes(digits, 10)?;
    Some(if sign == Sign::Minus { -v } else { v })
}

/// `BigInt(number)`: the exact value of an integral double; `None` for a fraction, NaN
/// or ±Infinity (JavaScript throws a RangeError).
pub(crate) fn from_f64(x: f64) -> Option<BigInt> {
    if !x.is_finite() || x.trunc() != x {
        return None;
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    // Subnormals are fractions (or zero), handled above; here exp >= 1.
    let (mantissa, shift) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp - 1075)
    };
    let m = BigInt::from(mantissa);
    let v = if shift >= 0 {
        m << shift as usize
    } else {
        m >> (-shift) as usize // exact: x is an integer
    };
    Some(if x.is_sign_negative() { -v } else { v })
}

fn only_digits(b: &[u8], radix: u32) -> bool {
    !b.is_empty() && b.iter().all(|&c| (c as char).is_digit(radix))
}

/// ECMAScript's WhiteSpace and LineTerminator (`String.prototype.trim`'s set): not
/// Rust's `char::is_whitespace`, which has U+0085 and lacks U+FEFF.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Option<String> {
        from_string(x).map(|v| v.to_string())
    }

    #[test]
    fn strings_as_bigint_reads_them() {
        // Each expectation is what node 20 prints for BigInt(x).
        let ok = [
            ("", "0"),
            ("  12 ", "12"),
            ("0x1F", "31"),
            ("0X1f", "31"),
            ("0o17", "15"),
            ("0b101", "5"),
            ("+5", "5"),
            ("-5", "-5"),
            ("-0", "0"),
            ("007", "7"),
            ("\u{a0}12\u{feff}", "12"),
            (
                "21888242871839275222246405745257275088548364400416034343698204186575808495618",
                "21888242871839275222246405745257275088548364400416034343698204186575808495618",
            ),
        ];
        for (x, want) in ok {
            assert_eq!(s(x).as_deref(), Some(want), "BigInt({x:?})");
        }
        // SyntaxError in node.
        for x in [
            "-0x10", "1.0", "1e3", "1_000", "\u{85} 1", "0x", "+", "-", "abc", "0xg", "0b2", "1 2",
            "--1",
        ] {
            assert_eq!(s(x), None, "BigInt({x:?}) throws");
        }
    }

    #[test]
    fn numbers_take_the_exact_double() {
        let n = |x: f64| from_f64(x).map(|v| v.to_string());
        assert_eq!(n(1e23).as_deref(), Some("99999999999999991611392"));
        assert_eq!(n(9007199254740993.0).as_deref(), Some("9007199254740992"));
        assert_eq!(n(-0.0).as_deref(), Some("0"));
        assert_eq!(n(-7.0).as_deref(), Some("-7"));
        assert_eq!(n(15.0).as_deref(), Some("15"));
        assert_eq!(
            n(f64::MAX).map(|v| v.len()),
            Some(309),
            "1.7976931348623157e308 has 309 digits"
        );
        for bad in [1.5, f64::INFINITY, f64::NAN, 5e-324, -0.5] {
            assert_eq!(n(bad), None, "BigInt({bad}) throws");
        }
    }
}
