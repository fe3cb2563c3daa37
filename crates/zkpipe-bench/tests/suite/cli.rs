//! `zkpipe-bench`'s command line: it lists the lab's three commands, and a usage error is
//! one line naming this binary, exit status 2 (as `zkpipe`'s are).

use crate::common;
use common::*;

#[test]
fn help_lists_the_lab_commands() {
    let o = zkpipe_bench(&["--help".as_ref()]);
    assert!(o.status.success(), "{}", text(&o));
    let help = String::from_utf8_lossy(&o.stdout);
    for command in ["bench", "loadtest", "sweep"] {
        assert!(
            help.lines()
                .any(|l| l.trim_start().starts_with(&format!("{command} "))),
            "{command} missing: {help}"
        );
    }
    for product in ["prove ", "serve ", "submit "] {
        assert!(
            !help.lines().any(|l| l.trim_start().starts_with(product)),
            "{product}listed: {help}"
        );
    }
    let o = zkpipe_bench(&["bench".as_ref(), "--help".as_ref()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--compare"));

    let o = zkpipe_bench(&["bench".as_ref(), "--no-such-flag".as_ref()]);
    assert_one_line_error(
        &o,
        &[
            "zkpipe-bench: ",
            "--no-such-flag",
            "(see zkpipe-bench bench --help)",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
}
