//! Records the git commit the binary is built from, for `zkpipe --version`
//! ("unknown" outside a git checkout, e.g. when built from a published crate).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=ZKPIPE_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a branch switch) and the branch's ref (a
    // commit). `--git-path` finds both in a worktree too. A missing file would make cargo
    // rerun every build, so only existing ones are named.
    println!("cargo:rerun-if-changed=build.rs");
    let mut watch = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(git(&["rev-parse", "--git-path", &r]));
        watch.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    }
    for path in watch.into_iter().flatten() {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
