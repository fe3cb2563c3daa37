//! `zkpipe inspect <file>`: what a snarkjs/circom file holds.

use anyhow::Result;
use std::path::Path;
use zkpipe_formats::container::Container;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::{sniff, FileKind};

/// Runs `inspect`.
pub fn run(path: &Path) -> Result<()> {
    match sniff(path)? {
        FileKind::Zkey => {
            let z = ZkeyFile::open(path)?;
            let h = &z.header;
            println!("file:          {}", path.display());
            println!("type:          zkey (Groth16)");
            println!("curve:         {} ({})", h.curve, h.curve.snarkjs_name());
            println!("n8q / n8r:     {} / {}", h.curve.n8q(), h.curve.n8r());
            println!("nVars:         {}", h.n_vars);
            println!("nPublic:       {}", h.n_public);
            println!(
                "domain size:   {} (2^{})",
                h.domain_size,
                h.domain_size.trailing_zeros()
            );
            println!("coefficients:  {}", z.n_coefficients());
            print_sections(path, "zkey", 1)?;
        }
        FileKind::Wtns => {
            let w = Wtns::read(path)?;
            println!("file:          {}", path.display());
            println!("type:          wtns");
            println!("curve:         {} ({})", w.curve, w.curve.snarkjs_name());
            println!("nWitness:      {}", w.n_witness);
            print_sections(path, "wtns", 2)?;
        }
        FileKind::R1cs => {
            let r = R1cs::read(path)?;
            let h = &r.header;
            println!("file:          {}", path.display());
            println!("type:          r1cs");
            println!("curve:         {} ({})", h.curve, h.curve.snarkjs_name());
            println!("wires:         {}", h.n_wires);
            println!("constraints:   {}", h.n_constraints);
            println!("public out:    {}", h.n_pub_out);
            println!("public in:     {}", h.n_pub_in);
            println!("private in:    {}", h.n_prv_in);
            println!("labels:        {}", h.n_labels);
            println!("terms:         {}", r.terms.len());
            print_sections(path, "r1cs", 1)?;
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
            println!("file:          {}", path.display());
            println!("type:          {kind}");
            if let Some(c) = v.get("curve") {
                println!("curve:         {c}");
            }
            if let Some(a) = v.as_array() {
                println!("entries:       {}", a.len());
            }
        }
    }
    Ok(())
}

fn print_sections(path: &Path, magic: &'static str, version: u32) -> Result<()> {
    let bytes = std::fs::read(path)?;
    let c = Container::parse(&bytes, magic, version..=version, "")
        .map_err(|k| zkpipe_formats::Error::new(path, k))?;
    println!("sections:");
    for s in &c.sections {
        println!(
            "  {:>3}  {:>12} bytes at offset {}",
            s.id,
            s.range.len(),
            s.range.start
        );
    }
    Ok(())
}
