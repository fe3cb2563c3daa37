//! `zkpipe inspect <file> [--json]`: what a snarkjs/circom file holds.

use anyhow::Result;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use zkpipe_formats::container::Container;
use zkpipe_formats::json::JsonDoc;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::wtns::{ValueClasses, Wtns};
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::{sniff, CurveId, FileKind};

/// Arguments of `inspect`.
#[derive(clap::Args)]
pub struct Args {
    /// The file.
    file: PathBuf,
    /// Print one JSON document on stdout: the fields below as keys, sections as
    /// `[{id, name, bytes, offset}]`.
    #[arg(long)]
    json: bool,
}

/// One line of the description: its text label and value, and its JSON keys and values.
struct Field {
    label: &'static str,
    text: String,
    json: Vec<(&'static str, Value)>,
}

fn field(
    label: &'static str,
    text: impl ToString,
    key: &'static str,
    v: impl Into<Value>,
) -> Field {
    Field {
        label,
        text: text.to_string(),
        json: vec![(key, v.into())],
    }
}

/// The witness's values by size: the share the MSMs skip (0), add once (1) or treat as
/// short scalars.
fn values_field(w: &Wtns) -> Field {
    let counts = w.value_classes().counts();
    // Text labels, in `ValueClasses::NAMES` order.
    let labels = ["0", "1", "2..2^8", "2^8..2^64", "r-2^64..r-1", "full"];
    let total = (w.n_witness as f64).max(1.0);
    let text = labels
        .iter()
        .zip(counts)
        .map(|(label, n)| format!("{label} {n} ({:.1}%)", 100.0 * n as f64 / total))
        .collect::<Vec<_>>()
        .join(", ");
    let json: Map<String, Value> = ValueClasses::NAMES
        .iter()
        .zip(counts)
        .map(|(key, n)| ((*key).to_string(), json!(n)))
        .collect();
    Field {
        label: "values",
        text,
        json: vec![("values", Value::Object(json))],
    }
}

/// What `inspect` prints, in one form for both outputs.
struct Description {
    fields: Vec<Field>,
    /// Each section of a container file.
    sections: Option<Vec<Section>>,
}

/// A section of a zkey, wtns or r1cs file.
struct Section {
    id: u32,
    name: &'static str,
    bytes: usize,
    offset: usize,
}

/// What section `id` of a `magic` file holds, as snarkjs's and circom's readers name it.
fn section_name(magic: &str, id: u32) -> &'static str {
    match (magic, id) {
        ("zkey", 1) => "header-protocol",
        ("zkey", 2) => "header",
        ("zkey", 3) => "IC",
        ("zkey", 4) => "coefficients",
        ("zkey", 5) => "A",
        ("zkey", 6) => "B1",
        ("zkey", 7) => "B2",
        ("zkey", 8) => "C",
        ("zkey", 9) => "H",
        ("zkey", 10) => "contributions",
        ("wtns", 1) => "header",
        ("wtns", 2) => "witness",
        ("r1cs", 1) => "header",
        ("r1cs", 2) => "constraints",
        ("r1cs", 3) => "wire-to-label",
        ("r1cs", 4) => "custom-gates-list",
        ("r1cs", 5) => "custom-gates-uses",
        _ => "unknown",
    }
}

/// Runs `inspect`.
pub fn run(a: Args) -> Result<()> {
    let d = describe(&a.file)?;
    let out = if a.json {
        let mut m = Map::new();
        for f in &d.fields {
            for (k, v) in &f.json {
                m.insert((*k).into(), v.clone());
            }
        }
        if let Some(s) = &d.sections {
            let s: Vec<Value> = s
                .iter()
                .map(|s| json!({"id": s.id, "name": s.name, "bytes": s.bytes, "offset": s.offset}))
                .collect();
            m.insert("sections".into(), s.into());
        }
        serde_json::to_string_pretty(&m)? + "\n"
    } else {
        let mut out = String::new();
        for f in &d.fields {
            writeln!(out, "{:<15}{}", format!("{}:", f.label), f.text)?;
        }
        if let Some(s) = &d.sections {
            writeln!(out, "sections:")?;
            // The offset stays the last word of the line (scripts read it).
            for s in s {
                writeln!(
                    out,
                    "  {:>3}  {:<17} {:>12} bytes at offset {}",
                    s.id, s.name, s.bytes, s.offset
                )?;
            }
        }
        out
    };
    use std::io::Write as _;
    // A reader that closed the pipe early (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(())
}

fn curve_field(c: CurveId) -> Field {
    field(
        "curve",
        format!("{c} ({})", c.snarkjs_name()),
        "curve",
        c.snarkjs_name(),
    )
}

fn describe(path: &Path) -> Result<Description> {
    let file = field("file", path.display(), "file", path.display().to_string());
    let (fields, sections) = match sniff(path)? {
        FileKind::Zkey => {
            let z = ZkeyFile::open(path)?;
            let h = &z.header;
            let fields = vec![
                file,
                field("type", "zkey (Groth16)", "type", "zkey"),
                curve_field(h.curve),
                Field {
                    label: "n8q / n8r",
                    text: format!("{} / {}", h.curve.n8q(), h.curve.n8r()),
                    json: vec![("n8q", h.curve.n8q().into()), ("n8r", h.curve.n8r().into())],
                },
                field("nVars", h.n_vars, "nVars", h.n_vars),
                field("nPublic", h.n_public, "nPublic", h.n_public),
                field(
                    "domain size",
                    format!("{} (2^{})", h.domain_size, h.domain_size.trailing_zeros()),
                    "domainSize",
                    h.domain_size,
                ),
                field(
                    "coefficients",
                    z.n_coefficients(),
                    "coefficients",
                    z.n_coefficients(),
                ),
            ];
            (fields, Some(sections(path, "zkey", 1)?))
        }
        FileKind::Wtns => {
            let w = Wtns::read(path)?;
            let fields = vec![
                file,
                field("type", "wtns", "type", "wtns"),
                curve_field(w.curve),
                field("nWitness", w.n_witness, "nWitness", w.n_witness),
                values_field(&w),
            ];
            (fields, Some(sections(path, "wtns", 2)?))
        }
        FileKind::R1cs => {
            let r = R1cs::read(path)?;
            let h = &r.header;
            let fields = vec![
                file,
                field("type", "r1cs", "type", "r1cs"),
                curve_field(h.curve),
                field("wires", h.n_wires, "nWires", h.n_wires),
                field(
                    "constraints",
                    h.n_constraints,
                    "nConstraints",
                    h.n_constraints,
                ),
                field("public out", h.n_pub_out, "nPubOut", h.n_pub_out),
                field("public in", h.n_pub_in, "nPubIn", h.n_pub_in),
                field("private in", h.n_prv_in, "nPrvIn", h.n_prv_in),
                field("labels", h.n_labels, "nLabels", h.n_labels),
                field("terms", r.terms.len(), "terms", r.terms.len()),
            ];
            (fields, Some(sections(path, "r1cs", 1)?))
        }
        FileKind::Json => {
            let v: Value = zkpipe_formats::json::read_json(path)?;
            let kind = JsonDoc::of(&v).to_string();
            let mut fields = vec![file, field("type", &kind, "type", kind.as_str())];
            if let Some(c) = v.get("curve") {
                fields.push(field("curve", c, "curve", c.clone()));
            }
            if let Some(a) = v.as_array() {
                fields.push(field("entries", a.len(), "entries", a.len()));
            }
            if JsonDoc::of(&v) == JsonDoc::VerificationKey {
                fields.extend(vk_fields(&v));
            }
            (fields, None)
        }
    };
    Ok(Description { fields, sections })
}

/// A verification key's nPublic and its IC points (nPublic + 1 in a sound key).
fn vk_fields(v: &Value) -> Vec<Field> {
    let mut fields = Vec::new();
    let n_public = v.get("nPublic").and_then(Value::as_u64);
    if let Some(n) = n_public {
        fields.push(field("nPublic", n, "nPublic", n));
    }
    if let Some(ic) = v.get("IC").and_then(Value::as_array) {
        let text = match n_public {
            Some(n) if n + 1 == ic.len() as u64 => format!("{} points (nPublic + 1)", ic.len()),
            Some(n) => format!("{} points (nPublic + 1 = {} expected)", ic.len(), n + 1),
            None => format!("{} points", ic.len()),
        };
        fields.push(field("IC", text, "icPoints", ic.len()));
    }
    fields
}

/// Each section of a container file.
fn sections(path: &Path, magic: &'static str, version: u32) -> Result<Vec<Section>> {
    let bytes = zkpipe_formats::files::read_input(path)?;
    let c = Container::parse(&bytes, magic, version..=version, "")
        .map_err(|k| zkpipe_formats::Error::new(path, k))?;
    Ok(c.sections
        .iter()
        .map(|s| Section {
            id: s.id,
            name: section_name(magic, s.id),
            bytes: s.range.len(),
            offset: s.range.start,
        })
        .collect())
}
