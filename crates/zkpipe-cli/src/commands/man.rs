//! `zkpipe man [COMMAND…]`: the manual page, roff on stdout (clap_mangen), generated from
//! the command line's own definition: `zkpipe man | man -l -` reads it, `zkpipe man >
//! zkpipe.1` installs it. With a command, that command's page (`zkpipe man export
//! solidityverifier` is zkpipe-export-solidityverifier(1)).

use anyhow::{bail, Result};
use std::io::Write;

/// Arguments of `man`.
#[derive(clap::Args)]
pub struct Args {
    /// A subcommand (and its subcommand) whose page to print instead of zkpipe(1).
    command: Vec<String>,
}

/// Runs `man` for the command line `cmd` (the whole `zkpipe` command).
pub fn run(a: Args, cmd: clap::Command) -> Result<()> {
    let mut cmd = cmd;
    cmd.build();
    let mut name = String::from("zkpipe");
    for sub in &a.command {
        let Some(found) = cmd.find_subcommand(sub).cloned() else {
            bail!("`{name}` has no subcommand {sub:?} (see {name} --help)");
        };
        name = format!("{name}-{}", found.get_name());
        cmd = found.name(name.clone());
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut page)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&page)?;
    out.flush()?;
    Ok(())
}
