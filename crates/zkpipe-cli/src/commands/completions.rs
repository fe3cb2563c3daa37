//! `zkpipe completions bash|zsh|fish`: a shell completion script on stdout, generated from
//! the command line's own definition (clap_complete), so it never falls behind it.

use anyhow::Result;
use clap_complete::Shell;
use std::io::Write;

/// Arguments of `completions`.
#[derive(clap::Args)]
#[command(after_help = "Install, e.g.:\n  \
    bash: zkpipe completions bash > ~/.local/share/bash-completion/completions/zkpipe\n  \
    zsh:  zkpipe completions zsh > ~/.zfunc/_zkpipe   (with fpath+=~/.zfunc before compinit)\n  \
    fish: zkpipe completions fish > ~/.config/fish/completions/zkpipe.fish")]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    shell: CompletionShell,
}

/// The shells completions are written for.
#[derive(Clone, Copy, clap::ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// Runs `completions` for the command line `cmd` (the whole `zkpipe` command).
pub fn run(a: Args, mut cmd: clap::Command) -> Result<()> {
    let shell = match a.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "zkpipe", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(())
}
