//! The environment as an attacker or a careless user leaves it: standard
//! output closed or full, a file size limit, too few file descriptors,
//! arguments that are not UTF-8, several runs writing one new folder, a
//! signal in the middle of writing, an object the static check would drown
//! in. Each exits with a status and a message that say what happened, and
//! leaves no temporary file behind.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const STRATEGY: &str = "generator/strategies/guarded-movsb.toml";

fn copygen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file under `dir`, recursively (paths relative to it).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().to_path_buf());
        }
    }
    out.sort();
    out
}

fn temporaries(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".tmp") || n.ends_with(".old")
        })
        .collect()
}

/// `cmd` with standard output opened on /dev/full (every write: ENOSPC).
fn into_dev_full(mut cmd: Command) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    cmd.stdout(full).stderr(Stdio::piped()).output().unwrap()
}

#[test]
fn help_and_version_into_a_full_disk_exit_1() {
    for args in [&["--help"][..], &["--version"], &["emit", "--help"]] {
        let mut cmd = copygen();
        cmd.args(args);
        let out = into_dev_full(cmd);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("No space left on device"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // The same into a pipe: all of it arrives, exit 0.
    let out = copygen().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).starts_with("copygen "),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_command_with_standard_output_closed_exits_1() {
    // `sh -c 'exec copygen list >&-'`: descriptor 1 closed at exec.
    for args in ["list", "--version"] {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("exec \"$0\" {args} >&-"))
            .arg(env!("CARGO_BIN_EXE_copygen"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("Bad file descriptor"),
            "{args}: {}",
            text(&out.stderr)
        );
    }
    // Standard output on /dev/null (write-only, as a shell opens it) is
    // written, not refused.
    let out = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" list >/dev/null")
        .arg(env!("CARGO_BIN_EXE_copygen"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn arguments_that_are_not_utf8_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join(OsStr::from_bytes(b"w\xff\xfe.csv"));
    std::fs::write(&bad, "size\n64\n").unwrap();
    let json = dir.path().join(OsStr::from_bytes(b"out\xff.json"));
    let runs: Vec<Vec<&OsStr>> = vec![
        // A file name given where a path is taken: used as it is.
        vec![
            OsStr::new("bench"),
            OsStr::new("rep_movsb"),
            OsStr::new("--sizes"),
            OsStr::new("64"),
            OsStr::new("--calls"),
            OsStr::new("1"),
            OsStr::new("--repeats"),
            OsStr::new("1"),
            OsStr::new("--json"),
            json.as_os_str(),
        ],
        vec![
            OsStr::new("bench"),
            OsStr::new("rep_movsb"),
            OsStr::new("--workload"),
            bad.as_os_str(),
        ],
        vec![OsStr::new("emit"), bad.as_os_str()],
        vec![OsStr::new("diff"), bad.as_os_str(), OsStr::new("WORKTREE")],
        vec![OsStr::new("list"), OsStr::from_bytes(b"--\xff")],
        vec![
            OsStr::new("emit"),
            OsStr::new("--arch"),
            OsStr::from_bytes(b"x86\xff"),
            OsStr::new(STRATEGY),
        ],
    ];
    for args in runs {
        let out = copygen().args(&args).output().unwrap();
        let err = text(&out.stderr);
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.status.code().is_some(), "{args:?}: {:?}", out.status);
    }
    // The bench wrote its JSON to the file named.
    assert!(json.exists(), "no {json:?}");
}

/// `emit -o` under a file size limit of 1 KiB (`ulimit -f 1`): a located
/// failure saying what is missing, exit 1, and nothing left behind.
#[test]
fn a_file_size_limit_is_an_error_not_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let mut cmd = copygen();
    cmd.args(["emit", STRATEGY, "-o"]).arg(&out_dir);
    // SAFETY: setrlimit between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.signal(), None, "killed: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ulimit -f"), "{err}");
    assert!(!out_dir.exists(), "{:?}", files_under(dir.path()));
    assert!(
        files_under(dir.path()).is_empty(),
        "{:?}",
        files_under(dir.path())
    );
}

/// Too few file descriptors to run git is the environment's failure
/// (exit 1, naming the limit), not "not in a git repository" (exit 2).
#[test]
fn too_few_file_descriptors_is_an_environment_failure() {
    let mut cmd = copygen();
    cmd.args(["diff", "HEAD", "WORKTREE"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    // SAFETY: setrlimit between fork and exec. Four descriptors: enough
    // to start (the loader opens one at a time), too few for a pipe pair
    // to git beside the three standard ones.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 4,
                rlim_max: 4,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ulimit -n"), "{err}");
    assert!(!err.contains("not in a git repository"), "{err}");
}

/// Four `emit -o` runs into one new folder at once: all succeed
/// (`create_dir_all` semantics), the files are whole.
#[test]
fn concurrent_runs_create_one_new_folder() {
    let expected = copygen()
        .args(["emit", STRATEGY, "--flavor", "linux"])
        .output()
        .unwrap();
    assert!(expected.status.success());
    for round in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("a/b/c");
        let children: Vec<_> = (0..4)
            .map(|_| {
                copygen()
                    .args(["emit", STRATEGY, "-o"])
                    .arg(&out_dir)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "round {round}: {}", text(&out.stderr));
        }
        let written = std::fs::read(out_dir.join("x86_64/linux/guarded-movsb.S")).unwrap();
        assert_eq!(written, expected.stdout, "round {round}");
        assert!(
            temporaries(dir.path()).is_empty(),
            "{:?}",
            files_under(dir.path())
        );
    }
}

/// Threads of one process writing sets of files into one new, deep folder
/// at once (a tighter race than processes): every set is written.
#[test]
fn concurrent_writers_share_the_folders_they_make() {
    use std::sync::{Arc, Barrier};
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("a/b/c/d/e");
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (base, barrier) = (base.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let files = vec![
                        (base.join(format!("f/{i}.S")), format!("{i}\n")),
                        (base.join(format!("g/h/{i}.S")), format!("{i}\n")),
                    ];
                    barrier.wait();
                    copygen::output::write::write_all(&files).map_err(|e| format!("{e:#}"))
                })
            })
            .collect();
        for t in threads {
            let r = t.join().unwrap();
            assert!(r.is_ok(), "round {round}: {r:?}");
        }
        for i in 0..8 {
            assert_eq!(
                std::fs::read_to_string(base.join(format!("g/h/{i}.S"))).unwrap(),
                format!("{i}\n")
            );
        }
    }
}

/// SIGINT or SIGTERM while `emit` writes: the temporaries and the folders
/// made for them are removed, and the process ends by the signal. The run
/// is held mid-write by a FIFO among its outputs (written after the
/// regular files are staged, it blocks until read).
#[test]
fn a_signal_while_writing_removes_the_temporaries() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        std::fs::create_dir_all(out_dir.join("x86_64/linux")).unwrap();
        let fifo = out_dir.join("x86_64/linux/guarded-movsb.S");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut child = copygen()
            .args(["emit", STRATEGY, "-o"])
            .arg(&out_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The standalone file's temporary exists: the run is in the FIFO.
        let start = Instant::now();
        while temporaries(dir.path()).is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no temporary appeared: {:?}",
                files_under(dir.path())
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(out_dir.join("x86_64/standalone").is_dir());
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        assert!(
            temporaries(dir.path()).is_empty(),
            "{:?}",
            files_under(dir.path())
        );
        assert!(
            !out_dir.join("x86_64/standalone").exists(),
            "the folder made for the run is left: {:?}",
            files_under(dir.path())
        );
        // What was there before the run is still there.
        assert!(fifo.exists());
    }
}

/// `verify --static` of a dozen lines that assemble to a million `nop`s in one
/// routine is refused before any analysis (it took 3 GB), naming the
/// limit.
#[test]
fn the_static_check_refuses_an_object_past_its_code_limit() {
    let out = copygen()
        .args([
            "verify",
            "--static",
            "tests/fixtures/hostile/million-nops.S",
        ])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("million-nops.S: 1000001 bytes of code, more than the 64 KiB"),
        "{err}"
    );
}
