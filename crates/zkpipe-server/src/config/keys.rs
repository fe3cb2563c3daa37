//! `[keys.options.<id>]`: a key's own options, over the daemon-wide ones.

use serde::Deserialize;
use std::collections::BTreeMap;

/// One key's own options; what it leaves out comes from the daemon-wide settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct KeyOptionsSection {
    constant_work: Option<bool>,
}

/// `[keys.options.<id>]`: each named key's options, the rest taken from the daemon-wide
/// settings (`constant_work`).
pub(super) fn key_options(
    options: &BTreeMap<String, KeyOptionsSection>,
    constant_work: bool,
) -> Result<BTreeMap<String, zkpipe_core::BindOptions>, String> {
    options
        .iter()
        .map(|(id, o)| {
            if !zkpipe_engine::keys::valid_key_id(id) {
                return Err(format!("keys.options.{id}: {id:?} is not a key id"));
            }
            let opts = zkpipe_core::BindOptions {
                constant_work: o.constant_work.unwrap_or(constant_work),
            };
            Ok((id.clone(), opts))
        })
        .collect()
}
