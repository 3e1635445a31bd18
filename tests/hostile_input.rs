//! Hostile inputs and outputs at the command line: unbounded or non-regular
//! inputs, outputs that cannot be written, out-of-range numbers, FIFOs in a
//! folder under review, terminal escapes in what is echoed back, and runs
//! that write more files than a process may hold open.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_copygen");

fn copygen() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("RUST_BACKTRACE");
    c
}

/// Run with a watchdog: a run that has not exited after a minute is killed
/// and reported as a hang (the runs checked take well under a second; the
/// watchdog only keeps a regression from stalling the suite).
fn run_bounded(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("copygen runs");
    // Drained as it runs, so a long message cannot block it on a full pipe.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).expect("reading its output");
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    for _ in 0..600 {
        if let Some(status) = child.try_wait().expect("waiting") {
            return Output {
                status,
                stdout: out.join().unwrap(),
                stderr: err.join().unwrap(),
            };
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().expect("killing a hung run");
    panic!("{cmd:?} hung");
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn no_panic(o: &Output) {
    let e = stderr(o);
    assert!(
        !e.contains("panicked") && o.status.code() != Some(101),
        "a panic: {e}"
    );
}

fn strategy(name: &str) -> String {
    format!(
        "name = \"{name}\"\ndescription = \"d\"\narch = \"x86_64\"\n\n[methods.movsb]\nkind = \"rep_movs\"\nunit = 1\n\n[[dispatch]]\nsizes = \"0..\"\nuse = \"movsb\"\n"
    )
}

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("generator/strategies")
        .join(name)
}

// ---- 6: unbounded resources ------------------------------------------------

#[test]
fn devices_are_refused_as_not_regular_files() {
    for args in [
        &["emit", "/dev/zero"][..],
        &["emit", "/dev/urandom"],
        &["bench", "--distribution", "/dev/zero", "rep_movsb"],
        &["diff", "/dev/zero", "/dev/urandom"],
    ] {
        let mut c = copygen();
        c.args(args);
        let o = run_bounded(c);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let device = args.iter().find(|a| a.starts_with("/dev/")).unwrap();
        assert!(
            stderr(&o).contains(device) && stderr(&o).contains("not a regular file"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn input_over_the_limit_fails_on_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let blank = dir.path().join("blank.toml");
    // 32 MB of blank lines: refused before it is parsed.
    std::fs::write(&blank, vec![b'\n'; 32 << 20]).unwrap();
    let mut c = copygen();
    c.arg("emit").arg(&blank);
    let o = run_bounded(c);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("larger than 1 MiB"), "{}", stderr(&o));
    // A distribution of 17 MiB, over the 16 MiB of other inputs.
    let csv = dir.path().join("big.csv");
    std::fs::write(&csv, "1,".repeat(17 << 19)).unwrap();
    let mut c = copygen();
    c.args(["bench", "--distribution"])
        .arg(&csv)
        .arg("rep_movsb");
    let o = run_bounded(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("larger than 16 MiB"), "{}", stderr(&o));
}

#[test]
fn a_strategy_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("s.toml");
    nix_mkfifo(&fifo);
    let mut c = copygen();
    c.arg("emit").arg(&fifo);
    let o = run_bounded(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is a FIFO, not a regular file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn thousands_of_errors_on_one_line_stay_small() {
    // Each of 30,000 dispatch entries names an unknown method, all on one
    // line of 800 KB: every error used to copy the whole line.
    let line: Vec<String> = (0..30_000)
        .map(|i| format!("{{sizes=\"0..\",use=\"m{i}\"}}"))
        .collect();
    let text = format!(
        "name=\"x\"\ndescription=\"d\"\narch=\"x86_64\"\ndispatch = [{}]\n",
        line.join(",")
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("wide.toml");
    std::fs::write(&f, text).unwrap();
    let mut c = copygen();
    c.arg("emit").arg(&f);
    let o = run_bounded(c);
    assert_eq!(o.status.code(), Some(2));
    // Each error shows a bounded snippet of the line, not all of it.
    assert!(o.stderr.len() < 30_000 * 600, "{} bytes", o.stderr.len());
    let e = stderr(&o);
    let shown = e
        .lines()
        .find(|l| l.starts_with("4 | "))
        .expect("a snippet");
    assert!(
        shown.chars().count() < 200 && shown.contains('…'),
        "{shown}"
    );
}

fn nix_mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

#[test]
fn twelve_hundred_outputs_under_a_low_open_file_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for i in 0..600 {
        let f = dir.path().join(format!("s{i}.toml"));
        std::fs::write(&f, strategy(&format!("s{i}"))).unwrap();
        files.push(f);
    }
    let out = dir.path().join("out");
    let mut c = copygen();
    c.arg("emit").args(&files).arg("-o").arg(&out);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = run_bounded(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let written: usize = ["linux", "standalone"]
        .iter()
        .map(|f| {
            std::fs::read_dir(out.join("x86_64").join(f))
                .unwrap()
                .count()
        })
        .sum();
    assert_eq!(written, 1200);
}

// ---- 7: panics -------------------------------------------------------------

/// `args` with standard output to /dev/full: exit 1 and a message.
fn to_dev_full(args: &[&str]) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = copygen()
        .args(args)
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    assert!(
        stderr(&o).contains("copygen: write error: No space left on device"),
        "{args:?}: {}",
        stderr(&o)
    );
}

#[test]
fn a_full_standard_output_is_an_error_not_a_panic() {
    let s = shipped("guarded-movsb.toml");
    let s = s.to_str().unwrap();
    to_dev_full(&["list"]);
    to_dev_full(&["emit", s]);
    to_dev_full(&["emit", s, "-o", "-"]);
    to_dev_full(&["diff", s, s]);
    to_dev_full(&["man"]);
}

/// `args` with standard output a pipe whose reader is gone: a quiet exit.
fn to_closed_pipe(args: &[&str]) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: a two-element array; both ends are owned right below.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh descriptors from pipe2, each owned once.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // The reader is gone before copygen starts.
    drop(read_end);
    let mut child = copygen()
        .args(args)
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err, "", "{args:?}");
    assert_eq!(status.code(), Some(141), "{args:?}: {err}");
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let s = shipped("guarded-movsb.toml");
    let s = s.to_str().unwrap();
    to_closed_pipe(&["list"]);
    to_closed_pipe(&["emit", s]);
    to_closed_pipe(&["diff", s, s]);
}

/// `args` must be refused as a usage error naming `option`.
fn refused(args: &[&str], option: &str) {
    let o = copygen().args(args).output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    assert!(stderr(&o).contains(option), "{args:?}: {}", stderr(&o));
}

#[test]
fn numeric_options_out_of_range_are_usage_errors() {
    for b in ["1e300", "NaN", "-1", "inf", "0", "-inf", "604801"] {
        refused(
            &[
                "tune",
                &format!("--budget={b}"),
                "--distribution",
                "MemcpyGoogleA",
            ],
            "--budget",
        );
    }
    let bench = |opt: &str, v: &str| {
        refused(&["bench", opt, v, "rep_movsb"], opt);
    };
    for v in [
        "1099511627776",
        "18446744073709551615",
        "18446744073709551616",
        "0..=18446744073709551615",
        "0..=268435457",
    ] {
        bench("--sizes", v);
    }
    for opt in ["--src-offsets", "--dst-offsets", "--alias-offsets"] {
        for v in ["4096", "1099511627776", "18446744073709551615", "0..=4096"] {
            bench(opt, v);
        }
    }
    for v in ["0", "10001", "1099511627776", "18446744073709551615"] {
        bench("--repeats", v);
    }
    for v in ["0", "100000000000", "18446744073709551615"] {
        refused(
            &[
                "bench",
                "--distribution",
                "MemcpyGoogleA",
                "--calls",
                v,
                "rep_movsb",
            ],
            "--calls",
        );
    }
    for v in ["nan", "1.5", "-0.5"] {
        refused(
            &[
                "bench",
                "--distribution",
                "MemcpyGoogleA",
                &format!("--alias-share={v}"),
                "rep_movsb",
            ],
            "--alias-share",
        );
    }
    // Each list is in range, but together they make too many rows.
    refused(
        &[
            "bench",
            "--sizes",
            "0..=60000",
            "--src-offsets",
            "0..=4",
            "rep_movsb",
        ],
        "--src-offsets",
    );
}

// ---- 8: hangs --------------------------------------------------------------

#[test]
fn a_fifo_named_s_in_a_diff_folder_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("x86_64/linux");
    std::fs::create_dir_all(&sub).unwrap();
    let emitted = Path::new(env!("CARGO_MANIFEST_DIR")).join("emitted/x86_64/linux");
    std::fs::copy(emitted.join("rep-movsb.S"), sub.join("rep-movsb.S")).unwrap();
    nix_mkfifo(&sub.join("evil.S"));
    let mut c = copygen();
    c.arg("diff").arg(dir.path()).arg(dir.path());
    let o = run_bounded(c);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("evil.S: is a FIFO, not a regular file"),
        "{}",
        stderr(&o)
    );
    // A FIFO given as a side is refused the same way.
    let mut c = copygen();
    c.arg("diff")
        .arg(sub.join("evil.S"))
        .arg(sub.join("rep-movsb.S"));
    let o = run_bounded(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a FIFO"), "{}", stderr(&o));
}

// ---- 9: terminal escapes ---------------------------------------------------

/// No byte or character a terminal would act on.
fn assert_inert(what: &str, text: &str) {
    let bad = text.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    });
    assert!(bad.is_none(), "{what}: {bad:?} printed raw in {text:?}");
}

#[test]
fn messages_escape_what_the_input_says() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, String)> = vec![
        // A TOML escape in a key, echoed as an unknown field.
        (
            "key.toml",
            strategy("k") + "\"\\u001b]0;pwned\\u0007\" = 1\n",
        ),
        // A raw ESC and CR in a comment, shown in the source line.
        ("comment.toml", strategy("c") + "# \u{1b}[2J\r gone\n"),
        // A right-to-left override in a value echoed in a message.
        (
            "bidi.toml",
            strategy("b").replace("\"rep_movs\"", "\"rep\u{202e}_movs\""),
        ),
    ];
    for (name, text) in &cases {
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        let o = copygen().arg("emit").arg(&f).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert_inert(name, &stderr(&o));
        assert!(stderr(&o).contains("\\u{"), "{name}: {}", stderr(&o));
    }
    // A CSV field.
    let csv = dir.path().join("d.csv");
    std::fs::write(&csv, "1,2,\u{1b}]0;x\u{7}\n").unwrap();
    let o = copygen()
        .args(["bench", "--distribution"])
        .arg(&csv)
        .arg("rep_movsb")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_inert("csv", &stderr(&o));
    assert!(stderr(&o).contains("\\u{1b}]0;x\\u{7}"), "{}", stderr(&o));
    // A file name.
    let f = dir.path().join("bad\u{1b}[31m\u{7}.toml");
    std::fs::write(&f, "x").unwrap();
    let o = copygen().arg("emit").arg(&f).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_inert("file name", &stderr(&o));
    assert!(
        stderr(&o).contains("bad\\u{1b}[31m\\u{7}.toml"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn diff_listings_escape_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let emitted = Path::new(env!("CARGO_MANIFEST_DIR")).join("emitted/x86_64/linux");
    let (old, new) = (
        dir.path().join("old"),
        dir.path().join("new\u{1b}]0;t\u{7}"),
    );
    for side in [&old, &new] {
        std::fs::create_dir_all(side).unwrap();
        std::fs::copy(emitted.join("rep-movsb.S"), side.join("rep-movsb.S")).unwrap();
    }
    std::fs::copy(
        emitted.join("guarded-movsb.S"),
        new.join("x\u{1b}]0;t\u{7}.S"),
    )
    .unwrap();
    let o = copygen()
        .args(["diff", "--arch", "x86_64", "--flavor", "linux"])
        .arg(&old)
        .arg(&new)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_inert("diff listing", &out);
    assert!(out.contains("new\\u{1b}]0;t\\u{7}"), "{out}");
    // Instructions keep their tabs.
    assert!(out.contains("\tstac"), "{out}");
    assert_inert("diff messages", &stderr(&o));
}
