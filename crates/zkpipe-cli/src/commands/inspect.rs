//! `zkpipe inspect <file>`: what a snarkjs/circom file holds.

use anyhow::Result;
use std::fmt::Write as _;
use std::path::Path;
use zkpipe_formats::container::Container;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::{sniff, FileKind};

/// Runs `inspect`.
pub fn run(path: &Path) -> Result<()> {
    let mut out = String::new();
    describe(path, &mut out)?;
    use std::io::Write as _;
    // A reader that closed the pipe early (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(())
}

fn describe(path: &Path, out: &mut String) -> Result<()> {
    match sniff(path)? {
        FileKind::Zkey => {
            let z = ZkeyFile::open(path)?;
            let h = &z.header;
            writeln!(out, "file:          {}", path.display())?;
            writeln!(out, "type:          zkey (Groth16)")?;
            writeln!(
                out,
                "curve:         {} ({})",
                h.curve,
                h.curve.snarkjs_name()
            )?;
            writeln!(out, "n8q / n8r:     {} / {}", h.curve.n8q(), h.curve.n8r())?;
            writeln!(out, "nVars:         {}", h.n_vars)?;
            writeln!(out, "nPublic:       {}", h.n_public)?;
            writeln!(
                out,
                "domain size:   {} (2^{})",
                h.domain_size,
                h.domain_size.trailing_zeros()
            )?;
            writeln!(out, "coefficients:  {}", z.n_coefficients())?;
            print_sections(path, "zkey", 1, out)?;
        }
        FileKind::Wtns => {
            let w = Wtns::read(path)?;
            writeln!(out, "file:          {}", path.display())?;
            writeln!(out, "type:          wtns")?;
            writeln!(
                out,
                "curve:         {} ({})",
                w.curve,
                w.curve.snarkjs_name()
            )?;
            writeln!(out, "nWitness:      {}", w.n_witness)?;
            print_sections(path, "wtns", 2, out)?;
        }
        FileKind::R1cs => {
            let r = R1cs::read(path)?;
            let h = &r.header;
            writeln!(out, "file:          {}", path.display())?;
            writeln!(out, "type:          r1cs")?;
            writeln!(
                out,
                "curve:         {} ({})",
                h.curve,
                h.curve.snarkjs_name()
            )?;
            writeln!(out, "wires:         {}", h.n_wires)?;
            writeln!(out, "constraints:   {}", h.n_constraints)?;
            writeln!(out, "public out:    {}", h.n_pub_out)?;
            writeln!(out, "public in:     {}", h.n_pub_in)?;
            writeln!(out, "private in:    {}", h.n_prv_in)?;
            writeln!(out, "labels:        {}", h.n_labels)?;
            writeln!(out, "terms:         {}", r.terms.len())?;
            print_sections(path, "r1cs", 1, out)?;
        }
        FileKind::Json => {
            let v: serde_json::Value = zkpipe_formats::json::read_json(path)?;
            let kind = if v.get("pi_a").is_some() {
                "proof"
            } else if v.get("vk_alpha_1").is_some() {
                "verification key"
            } else if v.is_array() {
                "public signals"
            } else {
                "unrecognized JSON"
            };
            writeln!(out, "file:          {}", path.display())?;
            writeln!(out, "type:          {kind}")?;
            if let Some(c) = v.get("curve") {
                writeln!(out, "curve:         {c}")?;
            }
            if let Some(a) = v.as_array() {
                writeln!(out, "entries:       {}", a.len())?;
            }
        }
    }
    Ok(())
}

fn print_sections(path: &Path, magic: &'static str, version: u32, out: &mut String) -> Result<()> {
    let bytes = std::fs::read(path)?;
    let c = Container::parse(&bytes, magic, version..=version, "")
        .map_err(|k| zkpipe_formats::Error::new(path, k))?;
    writeln!(out, "sections:")?;
    for s in &c.sections {
        writeln!(
            out,
            "  {:>3}  {:>12} bytes at offset {}",
            s.id,
            s.range.len(),
            s.range.start
        )?;
    }
    Ok(())
}
