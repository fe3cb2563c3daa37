//! Writes the fuzz targets' seed inputs: `cargo run -p zkpipe-fuzz --example seeds --
//! <out dir> [tests/fixtures]` makes `<out dir>/<target>/<name>` for each seed.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let Some(out) = args.next() else {
        eprintln!("usage: seeds <out dir> [fixtures dir]");
        std::process::exit(2);
    };
    let fixtures = args.next();
    let seeds = zkpipe_fuzz::seeds::seeds(fixtures.as_deref())?;
    for s in &seeds {
        let dir = out.join(s.target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(&s.name), &s.bytes)?;
    }
    println!("{} seeds in {}", seeds.len(), out.display());
    Ok(())
}
