//! What `zkpipe-bench sweep` is asked to measure: daemon variants (`--variant 'NAME: key=value;
//! …'`), the concurrency list (`-c 1,4,8,16`), and the order the cells run in.

use std::fmt;
use std::str::FromStr;

/// Most variants in one sweep (each is a daemon, all running at once).
pub const MAX_VARIANTS: usize = 4;

/// Most daemons in one sweep once `--gpus` multiplied the variants.
pub const MAX_DAEMONS: usize = 8;

/// The environment variable that tells a CUDA daemon which GPUs it sees.
pub const VISIBLE_GPUS: &str = "CUDA_VISIBLE_DEVICES";

/// One `section.key=value` configuration setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// `section.key`.
    pub key: String,
    /// The value, as `serve --set` takes it.
    pub value: String,
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// A daemon configuration to measure: a name and settings over the config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// Its name (letters, digits, `_`, `-`, `.`; it names files).
    pub name: String,
    /// Settings passed to `serve` as `--set section.key=value`; those of the `env`
    /// section are the daemon's environment instead (`env.ZKPIPE_ALLOCATOR=mimalloc`).
    pub settings: Vec<Setting>,
}

/// The pseudo-section whose settings are environment variables of the daemon, for the
/// switches only the environment sets.
const ENV_SECTION: &str = "env.";

impl Variant {
    /// `--set` arguments' values: the settings outside the `env` section.
    pub fn config_settings(&self) -> Vec<String> {
        self.settings
            .iter()
            .filter(|s| !s.key.starts_with(ENV_SECTION))
            .map(ToString::to_string)
            .collect()
    }

    /// The daemon's extra environment: the `env` section's settings.
    pub fn environment(&self) -> Vec<(String, String)> {
        self.settings
            .iter()
            .filter_map(|s| {
                let name = s.key.strip_prefix(ENV_SECTION)?;
                Some((name.to_string(), s.value.clone()))
            })
            .collect()
    }

    /// The variant of an unmodified daemon, when none is given.
    pub fn default_variant() -> Self {
        Self {
            name: "default".into(),
            settings: Vec::new(),
        }
    }
}

/// Whether `name` can name a variant (and its files).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Whether `key` is `section.key` (each part letters, digits, `_` or `-`).
fn valid_key(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        })
}

/// Parses `section.key=value`.
fn parse_setting(text: &str) -> Result<Setting, String> {
    let bad = || format!("setting {text:?} is not section.key=value");
    let (key, value) = text.split_once('=').ok_or_else(bad)?;
    let (key, value) = (key.trim(), value.trim());
    if !valid_key(key) || value.is_empty() {
        return Err(bad());
    }
    Ok(Setting {
        key: key.into(),
        value: value.into(),
    })
}

impl FromStr for Variant {
    type Err = String;

    /// `NAME: section.key=value; section.key=value` (`NAME` or `NAME:` alone: no settings).
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        let name = name.trim();
        if !valid_name(name) {
            return Err(format!(
                "variant name {name:?}: use letters, digits, '_', '-' or '.' \
                 (syntax: 'NAME: section.key=value; ...')"
            ));
        }
        let mut settings: Vec<Setting> = Vec::new();
        for part in rest.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let setting = parse_setting(part)?;
            if settings.iter().any(|x| x.key == setting.key) {
                return Err(format!("variant {name}: {} is set twice", setting.key));
            }
            settings.push(setting);
        }
        Ok(Self {
            name: name.into(),
            settings,
        })
    }
}

/// The variants to run: the one "default" variant when none is given; at most
/// [`MAX_VARIANTS`], with distinct names.
pub fn variants(given: Vec<Variant>) -> Result<Vec<Variant>, String> {
    if given.is_empty() {
        return Ok(vec![Variant::default_variant()]);
    }
    if given.len() > MAX_VARIANTS {
        return Err(format!(
            "{} variants: at most {MAX_VARIANTS} (each is a daemon)",
            given.len()
        ));
    }
    for (i, v) in given.iter().enumerate() {
        if given[..i].iter().any(|w| w.name == v.name) {
            return Err(format!("variant name {:?} is given twice", v.name));
        }
    }
    Ok(given)
}

/// The variants by GPU count (`--gpus 1,2,4`): each variant once per count `n`, named
/// `NAME-gN` (just `gN` for the default variant), its daemon seeing `n` GPUs: the first `n`
/// of `visible` (this process's own `CUDA_VISIBLE_DEVICES`, comma-separated) if set, else
/// GPUs `0..n`. Refuses a variant that sets `CUDA_VISIBLE_DEVICES` itself, more GPUs than
/// `visible` lists, and more than [`MAX_DAEMONS`] daemons.
pub fn by_gpus(
    variants: Vec<Variant>,
    gpus: &[usize],
    visible: Option<&str>,
) -> Result<Vec<Variant>, String> {
    let listed: Option<Vec<&str>> = visible.map(|v| {
        v.split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .collect()
    });
    let mut out = Vec::new();
    for v in &variants {
        let key = format!("{ENV_SECTION}{VISIBLE_GPUS}");
        if v.settings.iter().any(|s| s.key == key) {
            return Err(format!("variant {} sets {key}, which --gpus sets", v.name));
        }
        for &n in gpus {
            let ids = match &listed {
                Some(l) if l.len() < n => {
                    return Err(format!(
                        "--gpus {n}: {VISIBLE_GPUS} lists {} GPU(s)",
                        l.len()
                    ))
                }
                Some(l) => l[..n].join(","),
                None => (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(","),
            };
            let mut settings = v.settings.clone();
            settings.push(Setting {
                key: key.clone(),
                value: ids,
            });
            let name = if *v == Variant::default_variant() {
                format!("g{n}")
            } else {
                format!("{}-g{n}", v.name)
            };
            out.push(Variant { name, settings });
        }
    }
    if out.len() > MAX_DAEMONS {
        return Err(format!(
            "{} variants × {} GPU counts: at most {MAX_DAEMONS} daemons",
            variants.len(),
            gpus.len()
        ));
    }
    Ok(out)
}

/// Client counts, ascending and distinct (`-c 1,4,8,16`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concurrency(pub Vec<usize>);

/// Parses `-c`: comma-separated positive counts, sorted ascending, no repeats.
pub fn parse_concurrency(s: &str) -> Result<Concurrency, String> {
    let mut cs = Vec::new();
    for part in s.split(',').map(str::trim) {
        let c: usize = part
            .parse()
            .map_err(|_| format!("bad -c list {s:?}: {part:?} is not a number"))?;
        if c == 0 {
            return Err(format!("bad -c list {s:?}: 0 clients"));
        }
        if cs.contains(&c) {
            return Err(format!("bad -c list {s:?}: {c} is repeated"));
        }
        cs.push(c);
    }
    cs.sort_unstable();
    Ok(Concurrency(cs))
}

/// The order of the cells: for each round, for each client count (ascending), every
/// variant, starting from a different one each time (rotated by round + client-count
/// index), so that no variant always goes first, neither in a round nor at a given c.
/// Yields (round, index of the client count, variant index).
pub fn schedule(rounds: usize, counts: usize, variants: usize) -> Vec<(usize, usize, usize)> {
    let mut order = Vec::new();
    for r in 0..rounds {
        for ci in 0..counts {
            for k in 0..variants {
                order.push((r, ci, (k + r + ci) % variants));
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_settings_are_the_daemons_environment() {
        let v: Variant = "host: env.ZKPIPE_CUDA_HOST_REDUCE=1; device.passes=2"
            .parse()
            .unwrap();
        assert_eq!(v.config_settings(), ["device.passes=2"]);
        assert_eq!(
            v.environment(),
            [("ZKPIPE_CUDA_HOST_REDUCE".to_string(), "1".to_string())]
        );
    }

    #[test]
    fn variants_parse() {
        let v: Variant = " fast : reduce.workers=4; device.passes = 2 ;"
            .parse()
            .unwrap();
        assert_eq!(v.name, "fast");
        assert_eq!(
            v.settings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["reduce.workers=4", "device.passes=2"]
        );
        for bare in ["a:", "a", "a: ", "a:;"] {
            let v: Variant = bare.parse().unwrap();
            assert_eq!((v.name.as_str(), v.settings.len()), ("a", 0), "{bare}");
        }
        let quoted: Variant = "m: memory.host_limit=\"4GiB\"".parse().unwrap();
        assert_eq!(quoted.settings[0].value, "\"4GiB\"");
        for bad in [
            ": reduce.workers=4",
            "a b: x.y=1",
            "../x:",
            "a: workers=4",
            "a: reduce.workers",
            "a: reduce.workers=",
            "a: .workers=1",
            "a: x.y=1; x.y=2",
        ] {
            assert!(bad.parse::<Variant>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn variant_lists_are_checked() {
        assert_eq!(variants(vec![]).unwrap(), [Variant::default_variant()]);
        let v = |n: &str| n.parse::<Variant>().unwrap();
        assert!(variants(vec![v("a"), v("a")])
            .unwrap_err()
            .contains("twice"));
        assert!(variants(vec![v("a"), v("b"), v("c"), v("d"), v("e")]).is_err());
        assert_eq!(variants(vec![v("a"), v("b")]).unwrap().len(), 2);
    }

    #[test]
    fn gpu_counts_make_a_variant_each_that_sees_that_many_gpus() {
        let v = |n: &str| n.parse::<Variant>().unwrap();
        let env = |x: &Variant| x.environment();
        let out = by_gpus(vec![Variant::default_variant()], &[1, 2, 4], None).unwrap();
        assert_eq!(
            out.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
            ["g1", "g2", "g4"]
        );
        assert_eq!(
            env(&out[2]),
            [(VISIBLE_GPUS.to_string(), "0,1,2,3".to_string())]
        );
        let out = by_gpus(vec![v("a: device.passes=2")], &[2], Some("3, 5,7")).unwrap();
        assert_eq!(out[0].name, "a-g2");
        assert_eq!(out[0].config_settings(), ["device.passes=2"]);
        assert_eq!(
            env(&out[0]),
            [(VISIBLE_GPUS.to_string(), "3,5".to_string())]
        );
        assert!(by_gpus(vec![v("a")], &[4], Some("0,1")).is_err());
        assert!(by_gpus(vec![v("a: env.CUDA_VISIBLE_DEVICES=1")], &[1], None).is_err());
        assert!(by_gpus(vec![v("a"), v("b"), v("c")], &[1, 2, 4], None).is_err());
    }

    #[test]
    fn concurrency_lists_parse_sorted() {
        assert_eq!(parse_concurrency("8,1, 4").unwrap().0, [1, 4, 8]);
        for bad in ["", "1,,2", "0", "1,x", "2,2", "-1"] {
            assert!(parse_concurrency(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn the_schedule_alternates_which_variant_goes_first() {
        let s = schedule(2, 2, 2);
        assert_eq!(
            s,
            [
                (0, 0, 0),
                (0, 0, 1),
                (0, 1, 1),
                (0, 1, 0),
                (1, 0, 1),
                (1, 0, 0),
                (1, 1, 0),
                (1, 1, 1)
            ]
        );
        // Every (round, c) group runs every variant once.
        for g in s.chunks(2) {
            let mut v: Vec<usize> = g.iter().map(|x| x.2).collect();
            v.sort_unstable();
            assert_eq!(v, [0, 1]);
        }
        assert_eq!(schedule(1, 3, 1).len(), 3);
    }
}
