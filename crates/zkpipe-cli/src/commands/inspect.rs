//! `zkpipe inspect <file> [--json]`: what a snarkjs/circom file holds.

use anyhow::Result;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use zkpipe_formats::container::Container;
use zkpipe_formats::json::JsonDoc;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::{sniff, CurveId, FileKind};

/// Arguments of `inspect`.
#[derive(clap::Args)]
pub struct Args {
    /// The file.
    file: PathBuf,
    /// Print one JSON document on stdout: the fields below as keys, sections as
    /// `[{id, bytes, offset}]`.
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
    let c = w.value_classes();
    let classes = [
        ("0", "zero", c.zero),
        ("1", "one", c.one),
        ("2..2^8", "upTo8Bits", c.up_to_8_bits),
        ("2^8..2^64", "upTo64Bits", c.up_to_64_bits),
        (
            "r-2^64..r-1",
            "negativeUpTo64Bits",
            c.negative_up_to_64_bits,
        ),
        ("full", "full", c.full),
    ];
    let total = (w.n_witness as f64).max(1.0);
    let text = classes
        .iter()
        .map(|(label, _, n)| format!("{label} {n} ({:.1}%)", 100.0 * *n as f64 / total))
        .collect::<Vec<_>>()
        .join(", ");
    let json: Map<String, Value> = classes
        .iter()
        .map(|(_, key, n)| ((*key).to_string(), json!(n)))
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
    /// (id, bytes, offset) of each section, for container files.
    sections: Option<Vec<(u32, usize, usize)>>,
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
                .map(|(id, bytes, offset)| json!({"id": id, "bytes": bytes, "offset": offset}))
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
            for (id, bytes, offset) in s {
                writeln!(out, "  {id:>3}  {bytes:>12} bytes at offset {offset}")?;
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
            (fields, None)
        }
    };
    Ok(Description { fields, sections })
}

/// (id, bytes, offset) of each section of a container file.
fn sections(path: &Path, magic: &'static str, version: u32) -> Result<Vec<(u32, usize, usize)>> {
    let bytes = zkpipe_formats::files::read_input(path)?;
    let c = Container::parse(&bytes, magic, version..=version, "")
        .map_err(|k| zkpipe_formats::Error::new(path, k))?;
    Ok(c.sections
        .iter()
        .map(|s| (s.id, s.range.len(), s.range.start))
        .collect())
}
