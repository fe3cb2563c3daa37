use super::*;

fn plan(outputs: &[&Path], inputs: &[&Path]) -> Result<Plan, Error> {
    Plan::new(outputs, inputs, Existing::Replace)
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn writes_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, "old").unwrap();
    plan(&[&a, &b], &[]).unwrap().write(&[b"1", b"2"]).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), b"1");
    assert_eq!(std::fs::read(&b).unwrap(), b"2");
    assert_eq!(
        names(dir.path()),
        ["a.json", "b.json"],
        "no temporaries left"
    );
}

#[test]
fn parts_are_written_one_after_another() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.zkey"), dir.path().join("b.zkey"));
    let first: &[&[u8]] = &[b"he", b"", b"llo"];
    let second: &[&[u8]] = &[];
    plan(&[&a, &b], &[])
        .unwrap()
        .write_parts(&[first, second])
        .unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), b"hello");
    assert_eq!(std::fs::read(&b).unwrap(), b"");
}

#[test]
fn checks_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let kind = |r: Result<Plan, Error>| r.unwrap_err().kind;
    let missing = d.join("no-such-dir").join("x.json");
    assert!(matches!(
        kind(plan(&[&missing], &[])),
        ErrorKind::NoDirectory(_)
    ));
    std::fs::write(d.join("file"), "").unwrap();
    let under_file = d.join("file").join("x.json");
    assert!(matches!(
        kind(plan(&[&under_file], &[])),
        ErrorKind::NotADirectory(_)
    ));
    assert!(matches!(kind(plan(&[d], &[])), ErrorKind::IsDirectory));
    let e = plan(&[Path::new("-"), Path::new("-")], &[]).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::StdoutTwice));
    let existing = d.join("file");
    let e = Plan::new(&[&existing], &[], Existing::Refuse).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::AlreadyExists));
    assert_eq!(names(d), ["file"], "checking wrote nothing");
}

#[test]
fn refuses_an_output_that_is_an_input_or_another_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.wtns");
    std::fs::write(&input, "witness").unwrap();
    let same = |r: Result<Plan, Error>| match r.unwrap_err().kind {
        ErrorKind::SameFile { other, role } => (other, role),
        k => panic!("{k}"),
    };
    assert_eq!(same(plan(&[&input], &[&input])), (input.clone(), "input"));
    // The same new file under two spellings.
    let (x, x2) = (d.join("x.json"), d.join("sub/../x.json"));
    std::fs::create_dir(d.join("sub")).unwrap();
    assert_eq!(same(plan(&[&x, &x2], &[])), (x.clone(), "output"));
    // A hard link and a symlink to the input are the input.
    let hard = d.join("hard.wtns");
    std::fs::hard_link(&input, &hard).unwrap();
    assert_eq!(same(plan(&[&hard], &[&input])).1, "input");
    let soft = d.join("soft.wtns");
    std::os::unix::fs::symlink("in.wtns", &soft).unwrap();
    assert_eq!(same(plan(&[&soft], &[&input])).1, "input");
    // Two outputs to /dev/null clash with nothing.
    let null = Path::new("/dev/null");
    plan(&[null, null], &[]).unwrap();
    assert_eq!(std::fs::read(&input).unwrap(), b"witness");
}

#[test]
fn a_symlink_keeps_pointing_at_the_replaced_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("real")).unwrap();
    std::fs::write(d.join("real/out.json"), "old").unwrap();
    let link = d.join("link.json");
    std::os::unix::fs::symlink("real/out.json", &link).unwrap();
    // And a dangling link: the file it names is created.
    let dangling = d.join("dangling.json");
    std::os::unix::fs::symlink("real/new.json", &dangling).unwrap();
    plan(&[&link, &dangling], &[])
        .unwrap()
        .write(&[b"new", b"created"])
        .unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(d.join("real/out.json")).unwrap(), b"new");
    assert_eq!(std::fs::read(d.join("real/new.json")).unwrap(), b"created");
    assert_eq!(names(&d.join("real")), ["new.json", "out.json"]);
}

#[test]
fn a_fifo_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let p = plan(&[&fifo], &[]).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    p.write(&[b"through"]).unwrap();
    assert_eq!(reader.join().unwrap(), b"through");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn a_failed_commit_puts_back_what_it_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, b, c) = (d.join("a"), d.join("b"), d.join("c"));
    std::fs::write(&a, "old a").unwrap();
    let p = plan(&[&a, &b, &c], &[]).unwrap();
    // After the plan, c turns into a non-empty directory: its rename fails after a
    // and b are in place.
    std::fs::create_dir(&c).unwrap();
    std::fs::write(c.join("inside"), "").unwrap();
    let e = p.write(&[b"new a", b"new b", b"new c"]).unwrap_err();
    assert_eq!(e.path, c, "the error names the output: {e}");
    assert!(!e.to_string().contains(".zkpipe-"), "{e}");
    assert_eq!(std::fs::read(&a).unwrap(), b"old a");
    assert_eq!(names(d), ["a", "c"], "b removed, no temporaries or backups");
}

#[test]
fn inputs_that_are_directories_or_empty_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_input(dir.path()).unwrap_err();
    assert_eq!(e.kind.to_string(), "is a directory");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let e = read_input(&empty).unwrap_err();
    assert_eq!(e.kind.to_string(), "is empty");
}
