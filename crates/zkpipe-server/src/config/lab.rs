//! Settings that exist only to re-run an experiment whose alternative lost (pages in
//! lab/experiments/): a product build refuses them with a one-line error, a build with
//! the `lab` cargo feature reads them as any other setting. The operator's configuration
//! offers only what an operator should choose between.

use super::FileConfig;

/// Each lab setting the file asks for, as `section.key = value`, with the experiment that
/// chose its default.
fn asked_for(f: &FileConfig) -> Vec<(String, &'static str)> {
    let mut asked = Vec::new();
    let mut value = |set: bool, what: String, page: &'static str| {
        if set {
            asked.push((what, page));
        }
    };
    let m = &f.memory;
    if let Some(d) = m.dealloc.as_deref() {
        value(
            d == "detached",
            format!("memory.dealloc = {d:?}"),
            "018b-deallocation",
        );
    }
    if let Some(r) = m.returns.as_deref() {
        value(
            matches!(r, "cas-pop" | "free"),
            format!("memory.returns = {r:?}"),
            "018f-buffer-returns-allocator",
        );
    }
    let d = &f.device;
    value(
        d.release_before_tail == Some(false),
        "device.release_before_tail = false".into(),
        "018g-gate-before-tail",
    );
    if let Some(k) = d.pinned_upload.as_deref() {
        value(
            k == "write-combined",
            format!("device.pinned_upload = {k:?}"),
            "018e-pinned-staging",
        );
    }
    let p = &f.pipeline;
    if let Some(s) = p.pools.as_deref() {
        value(
            s == "shared",
            format!("pipeline.pools = {s:?}"),
            "018c-stage-pools",
        );
    }
    if let Some(t) = p.throttle.as_deref() {
        value(
            matches!(t, "yield" | "pause"),
            format!("pipeline.throttle = {t:?}"),
            "018d-throttle",
        );
    }
    if let Some(n) = p.throttle_every {
        value(
            true,
            format!("pipeline.throttle_every = {n}"),
            "018d-throttle",
        );
    }
    if let Some(t) = p.throttle_max_pause.as_deref() {
        value(
            true,
            format!("pipeline.throttle_max_pause = {t:?}"),
            "018d-throttle",
        );
    }
    asked
}

/// Refuses the first lab setting `f` asks for, unless this is a `lab` build.
pub(super) fn refuse_lab_settings(f: &FileConfig) -> Result<(), String> {
    match asked_for(f).into_iter().next() {
        Some((what, page)) if !cfg!(feature = "lab") => Err(format!(
            "{what} is a lab setting (lab/experiments/{page}.md): build with --features lab"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> FileConfig {
        toml::from_str(text).unwrap()
    }

    /// Every lab setting is named, with its experiment; the defaults and the settings an
    /// operator chooses between are not.
    #[test]
    fn lab_settings_are_recognised() {
        for (text, what) in [
            (
                "[memory]\ndealloc = \"detached\"",
                "memory.dealloc = \"detached\"",
            ),
            (
                "[memory]\nreturns = \"cas-pop\"",
                "memory.returns = \"cas-pop\"",
            ),
            ("[memory]\nreturns = \"free\"", "memory.returns = \"free\""),
            (
                "[device]\nrelease_before_tail = false",
                "device.release_before_tail = false",
            ),
            (
                "[device]\npinned_upload = \"write-combined\"",
                "device.pinned_upload",
            ),
            (
                "[pipeline]\npools = \"shared\"",
                "pipeline.pools = \"shared\"",
            ),
            (
                "[pipeline]\nthrottle = \"pause\"",
                "pipeline.throttle = \"pause\"",
            ),
            (
                "[pipeline]\nthrottle = \"yield\"",
                "pipeline.throttle = \"yield\"",
            ),
            (
                "[pipeline]\nthrottle_every = 8",
                "pipeline.throttle_every = 8",
            ),
            (
                "[pipeline]\nthrottle_max_pause = \"1ms\"",
                "pipeline.throttle_max_pause",
            ),
        ] {
            let asked = asked_for(&file(text));
            assert_eq!(asked.len(), 1, "{text}");
            assert!(asked[0].0.starts_with(what), "{text}: {asked:?}");
        }
        for text in [
            "",
            "[memory]\ndealloc = \"worker\"\nreturns = \"drain-all\"",
            "[memory]\ndealloc = \"in-place\"",
            "[device]\nrelease_before_tail = true\npinned_upload = \"portable\"",
            "[pipeline]\npools = \"per-stage\"\nthrottle = \"off\"",
        ] {
            assert!(asked_for(&file(text)).is_empty(), "{text}");
        }
    }

    /// A product build refuses them in one line that says how to get them.
    #[cfg(not(feature = "lab"))]
    #[test]
    fn a_product_build_refuses_lab_settings() {
        let e = refuse_lab_settings(&file("[memory]\ndealloc = \"detached\"")).unwrap_err();
        assert_eq!(
            e,
            "memory.dealloc = \"detached\" is a lab setting \
             (lab/experiments/018b-deallocation.md): build with --features lab"
        );
        assert!(!e.contains('\n'));
        assert!(refuse_lab_settings(&file("[memory]\ndealloc = \"in-place\"")).is_ok());
    }
}
