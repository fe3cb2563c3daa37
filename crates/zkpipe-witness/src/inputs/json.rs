//! A JSON reader that keeps what `JSON.parse` keeps and serde_json's default `Map` loses:
//! the order of an object's keys, in JavaScript's `Object.keys` order (array-index keys
//! first, ascending, then the others in insertion order; a repeated key keeps its first
//! place and its last value), and each number's text (for error messages).
//
// Own reader rather than serde_json with `preserve_order`: that feature would be unified
// into every crate of the workspace and change the order of their JSON maps.

/// A JSON value as JavaScript sees it after `JSON.parse`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// The value as a double (what JavaScript holds) and the text it was written as.
    Number(f64, String),
    String(String),
    Array(Vec<Json>),
    /// Members in `Object.keys` order.
    Object(Vec<(String, Json)>),
}

/// Deeper nesting is refused rather than risking the stack (a daemon parses untrusted input).
const MAX_DEPTH: usize = 512;

/// Parses JSON text; the error says what is wrong and where (line and column, 1-based).
pub(crate) fn parse(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
        text,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(p.err("unexpected text after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        let before = &self.text[..self.pos.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!("{what} at line {line} column {col}")
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// JSON's whitespace only (space, tab, LF, CR), as `JSON.parse`.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected '{}'", c as char)))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested more than 512 deep"));
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            Some(_) => Err(self.err("expected a JSON value")),
            None => Err(self.err("unexpected end of input")),
        }
    }

    fn word(&mut self, w: &str, v: Json) -> Result<Json, String> {
        if self.s[self.pos..].starts_with(w.as_bytes()) {
            self.pos += w.len();
            Ok(v)
        } else {
            Err(self.err("expected a JSON value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, String> {
        self.pos += 1;
        let mut members: Vec<(String, Json)> = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key"));
            }
            let k = self.string()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let v = self.value(depth + 1)?;
            insert(&mut members, k, v);
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(js_key_order(members)));
                }
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, read as the nearest double (as
    /// JavaScript does; Rust's parser rounds correctly too). Too large is ±Infinity.
    fn number(&mut self) -> Result<Json, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.err("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("expected a digit after '.'"));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("expected a digit in the exponent"));
            }
            self.digits();
        }
        let text = &self.text[start..self.pos];
        let v: f64 = text.parse().map_err(|_| self.err("bad number"))?;
        Ok(Json::Number(v, text.to_owned()))
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        // UTF-16 code units, as JavaScript strings are; lone surrogates become U+FFFD.
        let mut units: Vec<u16> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("unterminated string"));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(String::from_utf16_lossy(&units));
                }
                b'\\' => {
                    self.pos += 1;
                    let e = self.peek().ok_or_else(|| self.err("unterminated string"))?;
                    self.pos += 1;
                    let u = match e {
                        b'"' => b'"' as u16,
                        b'\\' => b'\\' as u16,
                        b'/' => b'/' as u16,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => b'\n' as u16,
                        b'r' => b'\r' as u16,
                        b't' => b'\t' as u16,
                        b'u' => {
                            let hex = self
                                .text
                                .get(self.pos..self.pos + 4)
                                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                                .ok_or_else(|| self.err("bad \\u escape"))?;
                            self.pos += 4;
                            u16::from_str_radix(hex, 16).map_err(|_| self.err("bad \\u escape"))?
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.err("bad escape"));
                        }
                    };
                    units.push(u);
                }
                0x00..=0x1f => return Err(self.err("control character in a string")),
                _ => {
                    // One whole UTF-8 character (the input is a &str, so it is valid).
                    let ch = self.text[self.pos..].chars().next().unwrap_or('\u{fffd}');
                    let mut buf = [0u16; 2];
                    units.extend_from_slice(ch.encode_utf16(&mut buf));
                    self.pos += ch.len_utf8();
                }
            }
        }
    }
}

/// Sets `k` the way assigning a JavaScript object property does: a new key goes last, an
/// existing one keeps its place and takes the new value.
pub(crate) fn insert<V>(members: &mut Vec<(String, V)>, k: String, v: V) {
    match members.iter_mut().find(|(key, _)| *key == k) {
        Some(slot) => slot.1 = v,
        None => members.push((k, v)),
    }
}

/// `Object.keys` order: array indices (canonical decimal below 2^32 − 1) first in
/// ascending order, then the other keys as they were inserted.
pub(crate) fn js_key_order<V>(members: Vec<(String, V)>) -> Vec<(String, V)> {
    let (mut indices, others): (Vec<_>, Vec<_>) = members
        .into_iter()
        .partition(|(k, _)| array_index(k).is_some());
    indices.sort_by_key(|(k, _)| array_index(k));
    indices.extend(others);
    indices
}

/// The value of an array-index key: "0" or digits without a leading zero, below 2^32 − 1.
fn array_index(k: &str) -> Option<u32> {
    let canonical = k == "0" || (!k.starts_with('0') && k.bytes().all(|b| b.is_ascii_digit()));
    if !canonical || k.is_empty() || k.len() > 10 {
        return None;
    }
    k.parse::<u64>()
        .ok()
        .filter(|&n| n < u32::MAX as u64)
        .map(|n| n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        match parse(text).unwrap() {
            Json::Object(m) => m.into_iter().map(|(k, _)| k).collect(),
            v => panic!("not an object: {v:?}"),
        }
    }

    #[test]
    fn object_keys_in_javascript_order() {
        // node: Object.keys(JSON.parse(this)) is
        // [ '0', '1', '4294967294', 'b', '4294967295', '01', 'a' ]
        let text = r#"{"b":1,"4294967295":2,"4294967294":3,"1":4,"01":5,"a":6,"0":7,"b":8}"#;
        assert_eq!(
            keys(text),
            ["0", "1", "4294967294", "b", "4294967295", "01", "a"]
        );
        // A repeated key keeps its first place and its last value.
        let Json::Object(m) = parse(text).unwrap() else {
            unreachable!()
        };
        assert_eq!(m[3].1, Json::Number(8.0, "8".into()));
    }

    #[test]
    fn reads_strings_numbers_and_nesting() {
        let v = parse(" {\"s\\u00e9\\n\\ud83d\\ude00\": [1.5e1, -0, true, null, \"x\"]} ").unwrap();
        let Json::Object(m) = v else { unreachable!() };
        assert_eq!(m[0].0, "s\u{e9}\n\u{1f600}");
        assert_eq!(
            m[0].1,
            Json::Array(vec![
                Json::Number(15.0, "1.5e1".into()),
                Json::Number(-0.0, "-0".into()),
                Json::Bool(true),
                Json::Null,
                Json::String("x".into()),
            ])
        );
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for bad in [
            "",
            "{",
            "{\"a\":1,}",
            "[1,]",
            "01",
            "1.",
            ".5",
            "+1",
            "{'a':1}",
            "\"a\nb\"",
            "\"\\x\"",
            "NaN",
            "Infinity",
            "{\"a\" 1}",
            "[1] x",
            "\u{feff}{}",
            "tru",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
        let deep = "[".repeat(600) + &"]".repeat(600);
        assert!(parse(&deep).unwrap_err().contains("nested"));
    }

    #[test]
    fn errors_say_where() {
        assert_eq!(
            parse("{\n  \"a\": 1,\n  \"b\" 2\n}").unwrap_err(),
            "expected ':' at line 3 column 7"
        );
    }
}
