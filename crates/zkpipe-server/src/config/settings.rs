//! `serve --set section.key=value`: one setting applied to the file's table before it is
//! read.

/// Sets one `section.key = value` in `table` (`--set`): `value` is read as TOML, else
/// taken as a string, so `memory.dealloc=in-place` needs no quotes.
pub(super) fn apply_setting(table: &mut toml::Table, setting: &str) -> Result<(), String> {
    let bad = || format!("setting {setting:?} is not section.key=value");
    let (path, value) = setting.split_once('=').ok_or_else(bad)?;
    let path: Vec<&str> = path.trim().split('.').collect();
    if path.len() != 2 || path.iter().any(|p| p.is_empty()) {
        return Err(bad());
    }
    let value = value.trim();
    let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let section = table
        .entry(path[0])
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let toml::Value::Table(section) = section else {
        return Err(format!("setting {setting:?}: {} is not a section", path[0]));
    };
    section.insert(path[1].to_string(), value);
    Ok(())
}
