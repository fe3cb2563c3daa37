use super::*;

#[test]
fn sizes_and_durations_parse_or_fail_loudly() {
    assert_eq!(parse_size("512MiB"), Ok(512 << 20));
    assert_eq!(parse_size("3"), Ok(3));
    assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
    assert!(parse_size("lots").is_err());
    assert!(parse_size("5 parsecs").is_err());
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
    assert!(parse_duration("10").is_err());
}

#[test]
fn the_example_config_is_valid_and_complete() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../zkpipe.example.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let raw: FileConfig = toml::from_str(&text).unwrap();
    let c = raw.validate(Path::new("/srv")).unwrap();
    assert!(c.server.grpc_listen.ip().is_loopback());
    assert_eq!(c.engine.key_dir, Path::new("/srv/keys"));
    assert_eq!(c.server.state_dir, Path::new("/srv/zkpipe-state"));
    // Unknown fields and non-loopback addresses are refused.
    assert!(c.server.token.is_none() && c.server.tls.is_none());
    // No store URL: the embedded store, with the fleet's defaults spelled out.
    assert!(c.server.store.is_none());
    assert_eq!(c.engine.fleet, zkpipe_engine::FleetConfig::default());
    // Unknown fields and non-loopback addresses without a token are refused.
    assert!(toml::from_str::<FileConfig>("[server]\nport = 1").is_err());
    let remote: FileConfig = toml::from_str("[server]\ngrpc_listen = \"0.0.0.0:1\"").unwrap();
    assert!(remote
        .validate(Path::new("."))
        .unwrap_err()
        .contains("no token is set"));
    let bad: FileConfig = toml::from_str("[memory]\nhost_limit = \"8 bananas\"").unwrap();
    assert!(bad
        .validate(Path::new("."))
        .unwrap_err()
        .contains("memory.host_limit"));
    let zero: FileConfig = toml::from_str("[server]\nmax_inflight_request_bytes = 0").unwrap();
    assert_eq!(
        zero.validate(Path::new(".")).unwrap_err(),
        "server.max_inflight_request_bytes: must be at least 1 byte"
    );
    assert_eq!(c.server.stream_idle_timeout, DEFAULT_STREAM_IDLE_TIMEOUT);
    for (value, error) in [
        ("\"0s\"", "server.stream_idle_timeout: must be more than 0"),
        ("\"soon\"", "server.stream_idle_timeout: "),
    ] {
        let bad: FileConfig =
            toml::from_str(&format!("[server]\nstream_idle_timeout = {value}")).unwrap();
        let e = bad.validate(Path::new(".")).unwrap_err();
        assert!(e.starts_with(error) && e.lines().count() == 1, "{e}");
    }
}

#[test]
fn settings_replace_file_values_and_bad_ones_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("z.toml");
    std::fs::write(
        &file,
        "[pipeline]\nqueue_depth = 3\n[server]\nwitness_inline_max = \"2MiB\"",
    )
    .unwrap();
    let with = |settings: &[&str]| {
        let o = Overrides {
            settings: settings.iter().map(|s| s.to_string()).collect(),
            ..Overrides::default()
        };
        FileConfig::load(Some(&file), &o)
    };
    let c = with(&[]).unwrap();
    assert_eq!(
        (c.engine.queue_depth, c.server.witness_inline_max),
        (3, 2 << 20)
    );
    let c = with(&["pipeline.queue_depth=9", "server.witness_inline_max = 5"]).unwrap();
    assert_eq!((c.engine.queue_depth, c.server.witness_inline_max), (9, 5));
    assert!(!c.engine.constant_work, "off unless asked for");
    let c = with(&["pipeline.constant_work=true"]).unwrap();
    assert!(c.engine.constant_work);
    assert!(c.server.witness_sync, "synced unless asked otherwise");
    let c = with(&["server.witness_sync=false"]).unwrap();
    assert!(!c.server.witness_sync);
    let e = with(&[
        "server.witness_sync=false",
        "store.url=postgres://db.example/zkpipe",
    ])
    .unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("server.witness_sync") && e.contains("embedded"),
        "{e}"
    );
    // Not TOML: a string, so the usual "unit" parsing reads it.
    let c = with(&["server.witness_inline_max=128KiB"]).unwrap();
    assert_eq!(c.server.witness_inline_max, 128 << 10);
    let c = with(&["device.pinned_upload=write-combined"]);
    if cfg!(feature = "lab") {
        let c = c.unwrap();
        assert_eq!(
            c.server.pinned_upload,
            zkpipe_core::PinnedKind::WriteCombined
        );
    } else {
        assert!(c.unwrap_err().to_string().contains("is a lab setting"));
    }
    let c = with(&["device.pinned_upload=portable"]).unwrap();
    assert_eq!(c.server.pinned_upload, zkpipe_core::PinnedKind::Portable);
    let c = with(&["pipeline.retain_jobs=5", "pipeline.retain_bytes=1MiB"]).unwrap();
    assert_eq!((c.engine.retain_jobs, c.engine.retain_bytes), (5, 1 << 20));
    for (bad, says) in [
        ("queue_depth=1", "not section.key=value"),
        ("pipeline.nope=1", "nope"),
        ("pipeline.queue_depth=x", "queue_depth"),
        (
            "server.witness_inline_max=8 bananas",
            "server.witness_inline_max",
        ),
        ("device.pinned_upload=fast", "device.pinned_upload"),
        ("pipeline.retain_jobs=0", "pipeline.retain_jobs: must be"),
        ("pipeline.retain_bytes=0", "pipeline.retain_bytes: must be"),
        ("pipeline.retain_bytes=lots", "pipeline.retain_bytes"),
    ] {
        let e = with(&[bad]).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn overrides_replace_the_file_and_a_token_allows_other_addresses() {
    let raw = |t: &str| toml::from_str::<FileConfig>(t).unwrap();
    let o = Overrides {
        grpc_listen: Some("0.0.0.0:7".parse().unwrap()),
        key_dir: Some("/k".into()),
        state_dir: Some("/st".into()),
        token: Some(" 0123456789abcdef\n".into()),
        ..Overrides::default()
    };
    let file = "[server]\ngrpc_listen = \"127.0.0.1:1\"\n[keys]\ndir = \"x\"";
    let c = raw(file).validate_with(Path::new("/srv"), &o).unwrap();
    assert_eq!(c.server.grpc_listen, "0.0.0.0:7".parse().unwrap());
    assert_eq!(c.server.http_listen, "127.0.0.1:9464".parse().unwrap());
    assert_eq!(c.engine.key_dir, Path::new("/k"));
    assert_eq!(c.server.state_dir, Path::new("/st"));
    assert!(c.server.token.is_some());
    assert_eq!(c.server.shutdown_grace, Duration::from_secs(5));
    let short = Overrides {
        token: Some("0123".into()),
        ..o.clone()
    };
    let e = raw(file).validate_with(Path::new("."), &short).unwrap_err();
    assert!(
        e.starts_with("ZKPIPE_TOKEN: ") && e.contains("at least 16"),
        "{e}"
    );
    let e = raw("[server]\ntoken_file = \"/no/such/token\"")
        .validate(Path::new("."))
        .unwrap_err();
    assert!(e.starts_with("server.token_file: /no/such/token"), "{e}");
    let cfg = |t: &str| raw(t).validate(Path::new("."));
    assert!(cfg("[server]\ntls_cert = \"c.pem\"")
        .unwrap_err()
        .contains("go together"));
    assert!(cfg("[server]\nshutdown_grace = \"5\"")
        .unwrap_err()
        .contains("server.shutdown_grace"));
    // Old files still load; allow_remote alone allows nothing.
    assert!(cfg("[server]\nallow_remote = true").is_ok());
    assert!(
        cfg("[server]\nallow_remote = true\nhttp_listen = \"0.0.0.0:1\"")
            .unwrap_err()
            .contains("server.http_listen: 0.0.0.0:1 is beyond loopback")
    );
}

#[test]
fn device_passes_and_key_devices_are_read_and_checked() {
    let cfg = |text: &str| {
        toml::from_str::<FileConfig>(text)
            .unwrap()
            .validate(Path::new("."))
    };
    let c = cfg("[device]\npasses = 3\n[keys]\nmax_devices = 2").unwrap();
    assert_eq!(c.engine.device_passes, Some(3));
    assert_eq!(c.engine.key_max_devices, 2);
    let d = cfg("").unwrap();
    assert_eq!(d.engine.device_passes, None, "the devices decide");
    assert!(cfg("[device]\npasses = 0").unwrap_err().contains("passes"));
    assert!(cfg("[keys]\nmax_devices = 0")
        .unwrap_err()
        .contains("max_devices"));
    assert!(toml::from_str::<FileConfig>("[reduce]\npasses = 2").is_err());
}

#[test]
fn device_batch_is_read_and_checked() {
    let cfg = |text: &str| {
        toml::from_str::<FileConfig>(text)
            .unwrap()
            .validate(Path::new("."))
    };
    assert_eq!(
        cfg("[device]\nbatch = 8").unwrap().engine.device_batch,
        Some(8)
    );
    assert_eq!(
        cfg("[device]\nbatch = 1").unwrap().engine.device_batch,
        Some(1),
        "1 turns batching off"
    );
    assert_eq!(
        cfg("").unwrap().engine.device_batch,
        None,
        "the backend's limit decides"
    );
    assert!(cfg("[device]\nbatch = 0").unwrap_err().contains("batch"));
    assert!(toml::from_str::<FileConfig>("[device]\nbatch = -1").is_err());
    assert!(toml::from_str::<FileConfig>("[reduce]\nbatch = 2").is_err());
    let share = |text: &str| cfg(text).map(|c| c.engine.device_overlap_share);
    assert_eq!(share(""), Ok(2.0));
    assert_eq!(share("[device]\noverlap_share = 0"), Ok(0.0), "at once");
    assert_eq!(share("[device]\noverlap_share = 1.5"), Ok(1.5));
    assert!(share("[device]\noverlap_share = -1.0")
        .unwrap_err()
        .contains("overlap_share"));
    assert!(share("[device]\noverlap_share = nan")
        .unwrap_err()
        .contains("overlap_share"));
}

#[test]
fn device_split_is_read_and_checked() {
    let cfg = |text: &str| {
        toml::from_str::<FileConfig>(text)
            .unwrap()
            .validate(Path::new("."))
    };
    assert_eq!(cfg("").unwrap().engine.device_split, 1);
    assert_eq!(cfg("[device]\nsplit = 2").unwrap().engine.device_split, 2);
    assert!(cfg("[device]\nsplit = 0").unwrap_err().contains("split"));
    assert!(cfg("[device]\nsplit = 65").unwrap_err().contains("split"));
    assert_eq!(cfg("").unwrap().engine.device_stub, None);
    let stub = cfg("[device]\nstub_delay = \"2ms\"");
    #[cfg(not(feature = "lab"))]
    assert!(stub.unwrap_err().contains("lab"));
    #[cfg(feature = "lab")]
    assert_eq!(
        stub.unwrap().engine.device_stub,
        Some(Duration::from_millis(2))
    );
}

#[test]
fn tail_batch_is_read_and_checked() {
    let cfg = |text: &str| {
        toml::from_str::<FileConfig>(text)
            .unwrap()
            .validate(Path::new("."))
    };
    let c = cfg("[tail]\nbatch = 3\nworkers = 5").unwrap();
    assert_eq!((c.engine.tail_batch, c.engine.tail.workers), (3, 5));
    assert_eq!(cfg("").unwrap().engine.tail_batch, 16);
    assert!(!cfg("").unwrap().engine.tail_always_spread);
    assert!(
        cfg("[tail]\nalways_spread = true")
            .unwrap()
            .engine
            .tail_always_spread
    );
    assert!(cfg("[tail]\nbatch = 0").unwrap_err().contains("batch"));
}

#[test]
fn the_pinned_limit_is_half_the_host_limit_unless_set_and_within_it() {
    let cfg = |text: &str| {
        toml::from_str::<FileConfig>(text)
            .unwrap()
            .validate(Path::new("."))
    };
    let host = "[memory]\nhost_limit = \"8GiB\"\n";
    let pinned = |text: &str| cfg(&format!("{host}{text}")).map(|c| c.engine.pinned_memory_limit);
    assert_eq!(pinned(""), Ok(4 << 30));
    assert_eq!(pinned("pinned_limit = \"auto\""), Ok(4 << 30));
    assert_eq!(pinned("pinned_limit = \"1GiB\""), Ok(1 << 30));
    assert_eq!(pinned("pinned_limit = 0"), Ok(0));
    let over = pinned("pinned_limit = \"9GiB\"").unwrap_err();
    assert!(over.contains("memory.pinned_limit"), "{over}");
    let bad = pinned("pinned_limit = \"lots\"").unwrap_err();
    assert!(bad.starts_with("memory.pinned_limit"), "{bad}");
}

#[test]
fn the_stream_batch_is_the_devices_default_unless_set_and_at_least_one() {
    let batch = |text: &str| {
        toml::from_str::<FileConfig>(&format!("[memory]\n{text}"))
            .unwrap()
            .validate(Path::new("."))
            .map(|c| c.engine.stream_batch)
    };
    assert_eq!(batch(""), Ok(0));
    assert_eq!(batch("stream_batch = 3"), Ok(3));
    let zero = batch("stream_batch = 0").unwrap_err();
    assert!(zero.starts_with("memory.stream_batch"), "{zero}");
}

#[test]
fn dealloc_and_returns_modes_are_read_and_checked() {
    use zkpipe_engine::config::{DeallocMode, ReturnMode};
    let cfg = |text: &str| {
        toml::from_str::<FileConfig>(text)
            .unwrap()
            .validate(Path::new("."))
    };
    let d = cfg("").unwrap().engine;
    assert_eq!(
        (d.dealloc, d.returns),
        (DeallocMode::Worker, ReturnMode::DrainAll),
        "today's mechanisms by default"
    );
    for (text, mode) in [
        ("worker", DeallocMode::Worker),
        ("in-place", DeallocMode::InPlace),
        ("detached", DeallocMode::Detached),
    ] {
        let c = cfg(&format!("[memory]\ndealloc = \"{text}\""));
        assert_eq!(mode.to_string(), text);
        // A lab setting reads only in a `lab` build (config/lab.rs).
        if mode == DeallocMode::Detached && !cfg!(feature = "lab") {
            assert!(c.unwrap_err().contains("is a lab setting"));
            continue;
        }
        assert_eq!(c.unwrap().engine.dealloc, mode);
    }
    for (text, mode) in [
        ("drain-all", ReturnMode::DrainAll),
        ("cas-pop", ReturnMode::CasPop),
        ("free", ReturnMode::Free),
    ] {
        let c = cfg(&format!("[memory]\nreturns = \"{text}\""));
        assert_eq!(mode.to_string(), text);
        if mode != ReturnMode::DrainAll && !cfg!(feature = "lab") {
            assert!(c.unwrap_err().contains("is a lab setting"));
            continue;
        }
        assert_eq!(c.unwrap().engine.returns, mode);
    }
    let e = cfg("[memory]\ndealloc = \"threads\"").unwrap_err();
    assert_eq!(
        e,
        r#"memory.dealloc: "threads" is not one of "worker", "in-place", "detached""#
    );
    let e = cfg("[memory]\nreturns = \"Drain-All\"").unwrap_err();
    assert_eq!(
        e,
        r#"memory.returns: "Drain-All" is not one of "drain-all", "cas-pop", "free""#
    );
    assert!(toml::from_str::<FileConfig>("[memory]\ndealloc = 1").is_err());
    assert!(toml::from_str::<FileConfig>("[pipeline]\nreturns = \"free\"").is_err());
    // The example names the deallocation with its default, and no lab setting: in a
    // product build `returns` has nothing to choose between.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../zkpipe.example.toml");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("\ndealloc = \"worker\"\n"));
    let raw: FileConfig = toml::from_str(&text).unwrap();
    assert!(lab::refuse_lab_settings(&raw).is_ok());
}

#[test]
fn a_store_url_makes_a_fleet_daemon_and_fleet_settings_need_it() {
    let cfg = |text: &str, o: &Overrides| {
        toml::from_str::<FileConfig>(text)
            .unwrap()
            .validate_with(Path::new("."), o)
    };
    let none = Overrides::default();
    let c = cfg(
        "[server]\ngrpc_listen = \"127.0.0.1:7000\"\n[store]\nurl = \"postgres://db/z\"\nlease = \"9s\"\nclaim_ahead = 5",
        &none,
    )
    .unwrap();
    let s = c.server.store.unwrap();
    assert_eq!(s.url, "postgres://db/z");
    assert!(s.daemon.ends_with(":7000"), "{}", s.daemon);
    assert_eq!((s.inline_max, s.connections), (64 << 10, 8));
    assert_eq!(c.engine.fleet.lease, Duration::from_secs(9));
    assert_eq!(c.engine.fleet.claim_ahead, 5);
    // The environment's URL replaces the file's.
    let env = Overrides {
        store_url: Some("postgres://other/z".into()),
        ..Overrides::default()
    };
    let c = cfg("[store]\ndaemon = \"n1\"", &env).unwrap();
    let s = c.server.store.unwrap();
    assert_eq!(
        (s.url.as_str(), s.daemon.as_str()),
        ("postgres://other/z", "n1")
    );
    // Fleet settings without a URL, and bad values, are named.
    let e = cfg("[store]\ndaemon = \"n1\"", &none).unwrap_err();
    assert_eq!(e, "store.daemon is set but store.url is not");
    let e = cfg("[store]\nurl = \"postgres://db/z\"\nclaim_ahead = 0", &none).unwrap_err();
    assert!(e.contains("store.claim_ahead"), "{e}");
    let e = cfg("[store]\nurl = \"postgres://db/z\"\nlease = \"10\"", &none).unwrap_err();
    assert!(e.starts_with("store.lease"), "{e}");
}

#[test]
fn keys_take_their_own_options_or_the_daemon_wide_ones() {
    let cfg = |t: &str| {
        toml::from_str::<FileConfig>(t)
            .unwrap()
            .validate(Path::new("."))
    };
    let c = cfg(
        "[pipeline]\nconstant_work = true\n[keys.options.a]\nconstant_work = false\n\
                 [keys.options.b]\n",
    )
    .unwrap();
    let on = |id: &str| c.engine.bind_options(id).constant_work;
    assert!(!on("a") && on("b") && on("other"));
    let c = cfg("[keys.options.a]\nconstant_work = true").unwrap();
    let on = |id: &str| c.engine.bind_options(id).constant_work;
    assert!(on("a") && !on("b"));
    let e = cfg("[keys.options.\"../x\"]\nconstant_work = true").unwrap_err();
    assert!(e.starts_with("keys.options.../x: "), "{e}");
    assert!(toml::from_str::<FileConfig>("[keys.options.a]\nfast = true").is_err());
}
