//! `copygen record` against a fake tracefs folder (`--tracefs DIR`, and a
//! fake `/proc` through `--proc-dir`): what it writes to `kprobe_events`,
//! the events' `enable` and `filter` files, what it reads from
//! `trace_pipe`, and that whatever it added is gone again after a normal
//! end, an error mid-way, SIGINT and SIGTERM; the environments it refuses
//! (exit 2). The `--script` form is run with `sh` against the same fake.
//!
//! `kprobe_events` is a regular file here, so every line written is kept:
//! [`net_probes`] replays them as the kernel applies them (`p:G/E ...`
//! adds `G/E`, `-:G/E` removes it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use copygen::front::strategy::Arch;
use copygen::kernel::copy_symbols::probes;
use copygen::tools::record::{definitions, pick};

fn copygen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
}

const ANY: &str = "copygen_any: (rep_movs_alternative+0x0/0x70)";

fn call(i: usize) -> String {
    format!(
        "              dd-93      [000] d....    12.{i:06}: {ANY} to_off={} from_off=0 n={} to_kernel=0 from_kernel=1 caller=0xffffffff81000150\n",
        i % 4096,
        512 + i
    )
}

/// Global settings and what the fake holds in them.
const GLOBALS: [(&str, &str); 6] = [
    ("tracing_on", "1\n"),
    ("buffer_size_kb", "1408\n"),
    ("options/overwrite", "1\n"),
    ("options/event-fork", "0\n"),
    ("set_event_pid", "4242\n4243\n"),
    ("current_tracer", "function\n"),
];

/// Every global setting reads as the fake began.
fn globals_as_before(root: &Path) {
    for (f, v) in GLOBALS {
        assert_eq!(
            std::fs::read_to_string(root.join(f)).unwrap(),
            v,
            "{f} changed"
        );
    }
}

struct Fake {
    _dir: tempfile::TempDir,
    root: PathBuf,
    proc_dir: PathBuf,
    out: PathBuf,
}

/// A tracefs with the events of `symbol`'s probe (x86_64), `trace_pipe`
/// holding `pipe`, and a /proc without FSRM.
fn fake(symbol: &str, pipe: &str) -> Fake {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tracing");
    let proc_dir = dir.path().join("proc");
    std::fs::create_dir_all(proc_dir.join("sys/kernel")).unwrap();
    let probe = pick(Arch::X86_64, symbol).unwrap();
    for d in definitions(probes(Arch::X86_64), &probe) {
        let ev = root.join("events/copygen").join(&d.event);
        std::fs::create_dir_all(&ev).unwrap();
        std::fs::write(ev.join("enable"), "0").unwrap();
        std::fs::write(ev.join("filter"), "none").unwrap();
    }
    for f in ["kprobe_events", "trace"] {
        std::fs::write(root.join(f), "").unwrap();
    }
    // Top-level settings another tracing user left, which a recording must
    // leave as they are.
    std::fs::create_dir_all(root.join("options")).unwrap();
    for (f, v) in GLOBALS {
        std::fs::write(root.join(f), v).unwrap();
    }
    std::fs::write(root.join("trace_pipe"), pipe).unwrap();
    std::fs::write(
        root.join("available_filter_functions"),
        "vfs_read\nrep_movs_alternative\n_copy_from_user\n_copy_to_user\n",
    )
    .unwrap();
    std::fs::write(
        proc_dir.join("kallsyms"),
        "ffffffff81000100 t filemap_read\nffffffff81000200 T vfs_write\n",
    )
    .unwrap();
    std::fs::write(proc_dir.join("cpuinfo"), "flags\t\t: fpu sse2 erms\n").unwrap();
    std::fs::write(proc_dir.join("sys/kernel/osrelease"), "6.12.0-test\n").unwrap();
    let out = dir.path().join("out.csv");
    Fake {
        _dir: dir,
        root,
        proc_dir,
        out,
    }
}

impl Fake {
    fn cmd(&self, extra: &[&str]) -> Command {
        let mut c = copygen();
        c.arg("record")
            .arg("--tracefs")
            .arg(&self.root)
            .arg("--proc-dir")
            .arg(&self.proc_dir)
            .arg("-o")
            .arg(&self.out)
            .args(extra);
        c
    }
    fn run(&self, extra: &[&str]) -> Output {
        self.cmd(extra).output().unwrap()
    }
    fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("kprobe_events")).unwrap()
    }
    fn enable(&self, event: &str) -> String {
        std::fs::read_to_string(self.root.join("events/copygen").join(event).join("enable"))
            .unwrap()
    }
}

/// The probes left after replaying the lines written to kprobe_events.
fn net_probes(log: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for l in log.lines() {
        if let Some(name) = l.strip_prefix("-:") {
            assert!(
                set.remove(name.trim()),
                "removed {name}, which was not there: {log}"
            );
        } else if let Some((_, rest)) = l.split_once(':') {
            set.insert(rest.split_whitespace().next().unwrap().to_string());
        }
    }
    set
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Wait (not a timing assertion: a bound on a hang) until `cond`.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(120), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn records_rows_and_removes_its_probes_at_the_end() {
    let f = fake(
        "rep_movs_alternative",
        &(0..5).map(call).collect::<String>(),
    );
    std::fs::write(f.root.join("kprobe_events"), "p:other/keep vfs_read\n").unwrap();
    let o = f.run(&["--calls", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = f.log();
    assert!(
        log.contains("\np:copygen/copygen_any rep_movs_alternative to_off=%di:b12@0/64 "),
        "{log}"
    );
    assert_eq!(net_probes(&log), BTreeSet::from(["other/keep".to_string()]));
    assert_eq!(f.enable("copygen_any"), "0");
    let filter = std::fs::read_to_string(f.root.join("events/copygen/copygen_any/filter")).unwrap();
    assert!(filter.starts_with("common_pid != "), "{filter}");
    let csv = std::fs::read_to_string(&f.out).unwrap();
    assert!(csv.starts_with("# copygen record --symbol rep_movs_alternative on x86_64 Linux 6.12.0-test: 3 calls, --calls reached\n"), "{csv}");
    assert!(csv.ends_with("direction,size,dst_offset,src_offset,caller\nto,512,0,0,filemap_read\nto,513,1,0,filemap_read\nto,514,2,0,filemap_read\n"), "{csv}");
}

fn signal_ends_the_recording(sig: libc::c_int) {
    let f = fake(
        "rep_movs_alternative",
        &(0..2).map(call).collect::<String>(),
    );
    let child: Child = f
        .cmd(&["--calls", "1000"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the event is enabled", || f.enable("copygen_any") == "1");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 calls, stopped by a signal"),
        "{}",
        stderr(&o)
    );
    assert!(net_probes(&f.log()).is_empty(), "{}", f.log());
    assert!(f.log().contains("p:copygen/copygen_any"));
    assert_eq!(f.enable("copygen_any"), "0");
    let csv = std::fs::read_to_string(&f.out).unwrap();
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("to,")).count(),
        2,
        "{csv}"
    );
}

/// The calls the kernel wrote before the recording was told to end are read
/// after the events are disabled: `--seconds` ends the loop after at most
/// one read of the 64 KiB buffer here, yet every call of the pipe is kept.
#[test]
fn the_end_drains_what_the_ring_buffer_holds() {
    let n = 10_000;
    let f = fake(
        "rep_movs_alternative",
        &(0..n).map(call).collect::<String>(),
    );
    let o = f.run(&["--calls", "100000", "--seconds", "0.000001"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{n} calls, --seconds reached")),
        "{}",
        stderr(&o)
    );
    let csv = std::fs::read_to_string(&f.out).unwrap();
    assert_eq!(csv.lines().filter(|l| l.starts_with("to,")).count(), n);
    assert!(csv.ends_with(&format!(
        "to,{},{},0,filemap_read\n",
        512 + n - 1,
        (n - 1) % 4096
    )));
    assert!(net_probes(&f.log()).is_empty(), "{}", f.log());
    assert_eq!(f.enable("copygen_any"), "0");
}

#[test]
fn sigint_removes_the_probes() {
    signal_ends_the_recording(libc::SIGINT);
}

#[test]
fn sigterm_removes_the_probes() {
    signal_ends_the_recording(libc::SIGTERM);
}

#[test]
fn an_error_mid_way_removes_the_probes_and_writes_nothing() {
    let f = fake(
        "rep_movs_alternative",
        &format!("{}garbage here\n", call(0)),
    );
    let o = f.run(&["--calls", "10"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("trace_pipe:2:1: error: not a trace event line"),
        "{}",
        stderr(&o)
    );
    assert!(net_probes(&f.log()).is_empty(), "{}", f.log());
    assert!(f.log().contains("p:copygen/copygen_any"));
    assert_eq!(f.enable("copygen_any"), "0");
    assert!(!f.out.exists());

    // The second event cannot be enabled: the first is disabled again, both removed.
    let f = fake("_copy_user", &call(0));
    let enable = f.root.join("events/copygen/copygen_to/enable");
    std::fs::remove_file(&enable).unwrap();
    std::fs::create_dir(&enable).unwrap();
    let o = f.run(&["--symbol", "_copy_user"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("copygen_to/enable: cannot enable the event"),
        "{}",
        stderr(&o)
    );
    let log = f.log();
    assert!(
        log.contains("p:copygen/copygen_from") && log.contains("p:copygen/copygen_to"),
        "{log}"
    );
    assert!(net_probes(&log).is_empty(), "{log}");
    assert_eq!(f.enable("copygen_from"), "0");
}

#[test]
fn refused_environments_exit_2_and_say_what_to_do() {
    let f = fake("rep_movs_alternative", &call(0));
    type Setup = Box<dyn Fn(&Fake)>;
    let cases: Vec<(Setup, Vec<&str>, &str)> = vec![
        (
            Box::new(|f: &Fake| std::fs::remove_dir_all(&f.root).unwrap()),
            vec![],
            "tracefs is not mounted at",
        ),
        (
            Box::new(|f: &Fake| std::fs::remove_file(f.root.join("kprobe_events")).unwrap()),
            vec![],
            "CONFIG_KPROBE_EVENTS",
        ),
        (
            Box::new(|_: &Fake| {}),
            vec!["--symbol", "copygen_copy_user"],
            "copygen_copy_user is not in the running kernel",
        ),
        (
            Box::new(|f: &Fake| {
                std::fs::write(f.proc_dir.join("cpuinfo"), "flags : fpu erms fsrm\n").unwrap()
            }),
            vec!["--symbol", "rep_movs_alternative"],
            "this CPU has FSRM",
        ),
        (
            Box::new(|f: &Fake| {
                std::fs::write(f.root.join("kprobe_events"), "p:copygen/copygen_any foo\n").unwrap()
            }),
            vec![],
            "already holds probes of group copygen",
        ),
        (
            Box::new(|_: &Fake| {}),
            vec!["--symbol", "__arch_copy_to_user"],
            "not a copy routine copygen knows on x86_64",
        ),
    ];
    for (setup, args, want) in cases {
        let f = fake("rep_movs_alternative", &call(0));
        setup(&f);
        let before = std::fs::read_to_string(f.root.join("kprobe_events")).ok();
        let o = f.run(&args);
        assert_eq!(o.status.code(), Some(2), "{want}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{want}: {}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(f.root.join("kprobe_events")).ok(),
            before,
            "{want}"
        );
        assert!(!f.out.exists());
    }
    drop(f);
    // FSRM without --symbol: _copy_{from,to}_user, and the notes say why.
    let f = fake("_copy_user", "dd-1 [000] ..... 1.5: copygen_from: (_copy_from_user+0x0/0x50) to_off=0 from_off=8 n=16 caller=0xffffffff81000210\n");
    std::fs::write(f.proc_dir.join("cpuinfo"), "flags : fpu erms fsrm\n").unwrap();
    let o = f.run(&["--calls", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("this CPU has FSRM") && stderr(&o).contains("whole requests"),
        "{}",
        stderr(&o)
    );
    assert!(f.log().contains("p:copygen/copygen_from _copy_from_user "));
    assert!(net_probes(&f.log()).is_empty());
    assert!(std::fs::read_to_string(&f.out)
        .unwrap()
        .ends_with("from,16,0,8,vfs_write\n"));
}

/// Calls of a per-CPU kernel's variant routines, as named with `--symbol`.
const VARIANTS: &str = "cpu__erms_copy_user,cpu__zen_copy_user:rep_movs";

#[test]
fn routines_named_at_run_time_get_an_event_each() {
    // Two events, the second routine's call first: a `to` of 100 B at page
    // offset 16, then a `from` of 7 B.
    let pipe = "dd-1 [000] ..... 1.5: copygen_any2: (cpu__zen_copy_user+0x0/0x70) to_off=16 from_off=0 n=100 to_kernel=0 from_kernel=1 caller=0xffffffff81000150\n\
                dd-1 [000] ..... 1.6: copygen_any: (cpu__erms_copy_user+0x0/0x90) to_off=0 from_off=8 n=7 to_kernel=1 from_kernel=0 caller=0xffffffff81000210\n";
    let f = fake(VARIANTS, pipe);
    // Assembly routines: in kallsyms, not in available_filter_functions
    // (they call no ftrace hook).
    std::fs::write(
        f.proc_dir.join("kallsyms"),
        "ffffffff81000100 t filemap_read\nffffffff81000200 T vfs_write\n\
         ffffffff81001000 T cpu__erms_copy_user\nffffffff81001100 T cpu__zen_copy_user\n",
    )
    .unwrap();
    let o = f.run(&["--symbol", VARIANTS, "--calls", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = f.log();
    for (event, symbol) in [
        ("copygen_any", "cpu__erms_copy_user"),
        ("copygen_any2", "cpu__zen_copy_user"),
    ] {
        assert!(
            log.contains(&format!(
                "p:copygen/{event} {symbol} to_off=%di:b12@0/64 from_off=%si:b12@0/64 n=%cx:u64 "
            )),
            "{log}"
        );
    }
    assert!(net_probes(&log).is_empty(), "{log}");
    let csv = std::fs::read_to_string(&f.out).unwrap();
    assert!(
        csv.ends_with("direction,size,dst_offset,src_offset,caller\nto,100,16,0,filemap_read\nfrom,7,0,8,vfs_write\n"),
        "{csv}"
    );
}

#[test]
fn an_assembly_routine_is_found_in_kallsyms() {
    // A distribution kernel's ftrace lists only functions with an ftrace
    // hook: rep_movs_alternative (assembly) is absent there, present in
    // kallsyms, and a kprobe takes it.
    let f = fake("rep_movs_alternative", &call(0));
    std::fs::write(
        f.root.join("available_filter_functions"),
        "vfs_read\n_copy_from_user\n_copy_to_user\n",
    )
    .unwrap();
    std::fs::write(
        f.proc_dir.join("kallsyms"),
        "ffffffff81000100 t filemap_read\nffffffff81000200 T vfs_write\nffffffff81002000 T rep_movs_alternative\n",
    )
    .unwrap();
    let o = f.run(&["--calls", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(f
        .log()
        .contains("p:copygen/copygen_any rep_movs_alternative "));
    // Without it in kallsyms either: refused, naming it, nothing added.
    let g = fake(VARIANTS, "");
    let o = g.run(&["--symbol", VARIANTS, "--calls", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cpu__erms_copy_user, cpu__zen_copy_user is not in the running kernel"),
        "{}",
        stderr(&o)
    );
    assert_eq!(g.log(), "");
    assert!(!g.out.exists());
}

// ---- the --script form, run by sh --------------------------------------------------

fn script(dir: &Path, args: &[&str]) -> PathBuf {
    let path = dir.join("record.sh");
    let o = copygen()
        .args(["record", "--script"])
        .args(args)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    path
}

fn run_script(f: &Fake, script: &Path, kallsyms: &Path, cmd: &str) -> Output {
    Command::new("sh")
        .arg(script)
        .arg(&f.out)
        .args(["sh", "-c", cmd])
        .env("TRACEFS", &f.root)
        .env("KALLSYMS", kallsyms)
        .output()
        .unwrap()
}

#[test]
fn the_script_adds_the_same_probes_and_removes_them_on_every_way_out() {
    let f = fake("rep_movs_alternative", "");
    std::fs::create_dir_all(f.root.join("options")).unwrap();
    let dir = f.root.parent().unwrap().to_path_buf();
    let s = script(&dir, &["--arch", "x86_64"]);
    let text = std::fs::read_to_string(&s).unwrap();
    let def = &definitions(
        probes(Arch::X86_64),
        &pick(Arch::X86_64, "rep_movs_alternative").unwrap(),
    )[0];
    assert!(
        text.contains(&format!("add copygen_any '{}'\n", def.line)),
        "{text}"
    );
    let ks = dir.join("kallsyms");
    std::fs::write(&ks, "ffffffff81000000 T rep_movs_alternative\n").unwrap();

    // A normal end: the command "is traced" (it appends to the fake trace), its
    // status is the script's, and the trace comes with the marker line.
    let line = call(7);
    let cmd = format!(
        "printf '%s' '{}' >>\"$TRACEFS/trace\"; exit 3",
        line.trim_end()
    );
    let o = run_script(&f, &s, &ks, &cmd);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = std::fs::read_to_string(&f.out).unwrap();
    assert!(
        out.starts_with(
            "# copygen-record arch=x86_64 symbol=rep_movs_alternative rc=3 command: sh -c "
        ),
        "{out}"
    );
    assert!(out.contains(line.trim_end()), "{out}");
    assert!(
        net_probes(&f.log()).is_empty() && f.log().contains("p:copygen/copygen_any"),
        "{}",
        f.log()
    );
    assert_eq!(f.enable("copygen_any").trim(), "0");
    // The pid filter and event-fork were the command's; they read as before.
    globals_as_before(&f.root);
    // What it wrote converts on the host.
    let csv = dir.join("t.csv");
    let o = copygen()
        .args(["record", "--from-trace"])
        .arg(&f.out)
        .arg("-o")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .ends_with("\nto,519,7,0,\n"));

    // SIGINT to the script: it cleans up and exits 130.
    std::fs::write(f.root.join("kprobe_events"), "").unwrap();
    let o = run_script(&f, &s, &ks, "kill -INT $PPID");
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(
        net_probes(&f.log()).is_empty() && f.log().contains("p:copygen/copygen_any"),
        "{}",
        f.log()
    );
    // SIGTERM: 143.
    std::fs::write(f.root.join("kprobe_events"), "").unwrap();
    let o = run_script(&f, &s, &ks, "kill -TERM $PPID");
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    assert!(
        net_probes(&f.log()).is_empty() && f.log().contains("p:copygen/copygen_any"),
        "{}",
        f.log()
    );

    // A failure mid-way (the event cannot be enabled): exit 2, the probe removed.
    std::fs::write(f.root.join("kprobe_events"), "").unwrap();
    let enable = f.root.join("events/copygen/copygen_any/enable");
    std::fs::remove_file(&enable).unwrap();
    std::fs::create_dir(&enable).unwrap();
    let o = run_script(&f, &s, &ks, "true");
    assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
    globals_as_before(&f.root);
    assert!(
        stderr(&o).contains("cannot enable copygen/copygen_any"),
        "{}",
        stderr(&o)
    );
    assert!(
        net_probes(&f.log()).is_empty() && f.log().contains("p:copygen/copygen_any"),
        "{}",
        f.log()
    );

    // Refusals before anything is added: the symbol is not in kallsyms; no tracefs.
    std::fs::write(f.root.join("kprobe_events"), "").unwrap();
    std::fs::write(&ks, "ffffffff81000000 T _copy_to_user\n").unwrap();
    let o = run_script(&f, &s, &ks, "true");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("rep_movs_alternative is not in"),
        "{}",
        stderr(&o)
    );
    assert_eq!(f.log(), "");
    std::fs::remove_dir_all(&f.root).unwrap();
    let o = run_script(&f, &s, &ks, "true");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("tracefs is not mounted at"),
        "{}",
        stderr(&o)
    );
}

/// A kernel that hits the probes and keeps no event (riscv64 6.12 takes a
/// kprobe as an NMI, where its ring buffer refuses events): the script's
/// marker line carries the hit count from `kprobe_profile`, and
/// `--from-trace` says so instead of only "no calls".
#[test]
fn a_trace_without_events_says_the_probes_were_hit() {
    let f = fake("rep_movs_alternative", "");
    std::fs::create_dir_all(f.root.join("options")).unwrap();
    let profile = f.root.join("kprobe_profile");
    std::fs::write(
        &profile,
        "  copygen_any                                   292               0\n  other_any        5        0\n",
    )
    .unwrap();
    let dir = f.root.parent().unwrap().to_path_buf();
    let ks = dir.join("kallsyms");
    let csv = dir.join("t.csv");
    let from_trace = || {
        copygen()
            .args(["record", "--from-trace"])
            .arg(&f.out)
            .arg("-o")
            .arg(&csv)
            .output()
            .unwrap()
    };

    std::fs::write(&ks, "ffffffff8022e830 T __asm_copy_to_user\n").unwrap();
    let s = script(&dir, &["--arch", "riscv64"]);
    std::fs::write(f.root.join("kprobe_events"), "").unwrap();
    let o = run_script(&f, &s, &ks, "true");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = std::fs::read_to_string(&f.out).unwrap();
    assert!(
        out.starts_with(
            "# copygen-record arch=riscv64 symbol=__asm_copy_user rc=0 hits=292 command: sh -c true"
        ),
        "{out}"
    );
    let o = from_trace();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("error: no calls of copygen's probes in it; yet the kernel hit the probes 292 times while they were enabled")
            && e.contains("riscv64 Linux (6.12) runs a kprobe as an NMI"),
        "{e}"
    );
    assert!(!csv.exists());

    // Elsewhere the count, not riscv64's cause; never hit: the plain message.
    std::fs::write(&ks, "ffffffff81000000 T rep_movs_alternative\n").unwrap();
    let s = script(&dir, &["--arch", "x86_64"]);
    std::fs::write(f.root.join("kprobe_events"), "").unwrap();
    let o = run_script(&f, &s, &ks, "true");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&from_trace());
    assert!(
        e.contains("yet the kernel hit the probes 292 times") && !e.contains("NMI"),
        "{e}"
    );
    // Never hit, then a kernel without kprobe_profile (no count): the plain
    // message, and the command's words are not read as the marker's.
    let plain = |marker: &str| {
        std::fs::write(f.root.join("kprobe_events"), "").unwrap();
        let o = run_script(&f, &s, &ks, "echo hits=7 >/dev/null");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = std::fs::read_to_string(&f.out).unwrap();
        assert!(out.contains(marker), "{out}");
        let e = stderr(&from_trace());
        assert!(
            e.trim_end()
                .ends_with("error: no calls of copygen's probes in it"),
            "{e}"
        );
    };
    std::fs::write(&profile, "  copygen_any  0  0\n").unwrap();
    plain(" rc=0 hits=0 command: sh -c echo hits=7");
    std::fs::remove_file(&profile).unwrap();
    plain(" rc=0 command: sh -c echo hits=7");
}

// ---- a stuck tracefs, instances, -p and -- COMMAND ----------------------------------

/// Spawn `cmd` and wait for it with a bound on a hang (not a timing
/// assertion): past it the child is killed and the test fails.
fn wait_bounded(mut child: Child, what: &str) -> Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("{what}: still running after 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A `trace_pipe` that never runs dry (a FIFO that `yes` fills with events
/// of another group, without end): a signal ends the loop, the final read
/// ends at its limit (or whenever the pipe happens to be empty), the
/// probes are removed and the calls read before are written.
#[test]
fn a_trace_pipe_that_never_ends_does_not_hold_the_recorder() {
    let f = fake("rep_movs_alternative", "");
    let pipe = f.root.join("trace_pipe");
    std::fs::remove_file(&pipe).unwrap();
    let c = std::ffi::CString::new(pipe.to_str().unwrap()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Held open read-write: the FIFO never reports end of file, and its
    // buffer is made 1 MiB so that `yes` stays ahead of the reader.
    let hold = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&pipe)
        .unwrap();
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(hold.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
        use std::io::Write;
        (&hold).write_all(call(0).as_bytes()).unwrap();
    }
    let mut yes = Command::new("yes")
        .arg("  other-1 [000] d.... 1.500000: other_event: (vfs_read+0x0/0x10) a=1")
        .stdout(std::fs::OpenOptions::new().write(true).open(&pipe).unwrap())
        .spawn()
        .unwrap();
    let child = f
        .cmd(&["--calls", "1000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the event is enabled", || f.enable("copygen_any") == "1");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let o = wait_bounded(child, "the drain of an endless trace_pipe");
    let _ = yes.kill();
    let _ = yes.wait();
    drop(hold);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 calls, stopped by a signal"),
        "{}",
        stderr(&o)
    );
    assert!(net_probes(&f.log()).is_empty(), "{}", f.log());
    assert_eq!(f.enable("copygen_any"), "0");
    assert!(std::fs::read_to_string(&f.out)
        .unwrap()
        .ends_with("\nto,512,0,0,filemap_read\n"));
}

/// A `trace_pipe` of bytes without a newline (`/dev/zero`): the unfinished
/// line is not buffered past its bound; exit 2, the probes removed.
#[test]
fn an_endless_line_is_refused_not_buffered() {
    let f = fake("rep_movs_alternative", "");
    let pipe = f.root.join("trace_pipe");
    std::fs::remove_file(&pipe).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &pipe).unwrap();
    let child = f
        .cmd(&["--calls", "10"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_bounded(child, "an endless line");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("trace_pipe:1:1: error: a line of more than 65536 bytes"),
        "{}",
        stderr(&o)
    );
    assert!(net_probes(&f.log()).is_empty(), "{}", f.log());
    assert!(!f.out.exists());
}

/// The fake kernel's `mkdir` of an instance: the instance's files (a
/// template beside the fake tracefs). Its `rmdir` keeps the folder aside
/// as `removed-NAME`, so the test can read what was written in it.
fn fake_create(p: &Path) -> std::io::Result<()> {
    let root = p.parent().unwrap().parent().unwrap();
    let template = root.parent().unwrap().join("instance-template");
    let o = Command::new("cp")
        .arg("-r")
        .arg(&template)
        .arg(p)
        .output()?;
    if !o.status.success() {
        return Err(std::io::Error::other("cp failed"));
    }
    Ok(())
}

fn fake_remove(p: &Path) -> std::io::Result<()> {
    let name = p.file_name().unwrap().to_str().unwrap();
    std::fs::rename(p, p.with_file_name(format!("removed-{name}")))
}

/// As tracefs's `rmdir` while another program has one of the instance's
/// files open: EBUSY, the first two times for each instance.
fn busy_then_remove(p: &Path) -> std::io::Result<()> {
    let tries = p.with_extension("busy");
    let n = std::fs::read_to_string(&tries).map_or(0, |t| t.len());
    if n < 2 {
        std::fs::write(&tries, "x".repeat(n + 1))?;
        return Err(std::io::Error::from_raw_os_error(libc::EBUSY));
    }
    fake_remove(p)
}

/// An instance template for `fake`: the events, a `trace_pipe` holding
/// `pipe`, the instance's own settings.
fn instance_template(f: &Fake, pipe: &str) {
    let t = f.root.parent().unwrap().join("instance-template");
    std::fs::create_dir_all(t.join("options")).unwrap();
    let src = f.root.join("events");
    let o = Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(t.join("events"))
        .output()
        .unwrap();
    assert!(o.status.success());
    std::fs::write(t.join("trace_pipe"), pipe).unwrap();
    for (file, v) in [
        ("tracing_on", "1\n"),
        ("set_event_pid", ""),
        ("options/event-fork", "0\n"),
        ("options/overwrite", "1\n"),
        ("buffer_size_kb", "1408\n"),
        ("trace", ""),
    ] {
        std::fs::write(t.join(file), v).unwrap();
    }
    std::fs::create_dir_all(f.root.join("instances")).unwrap();
}

/// Where the kernel has instances the live recorder makes its own, enables
/// and reads its events there, and removes it: the top-level settings,
/// its buffer and its events' switches read as before, `kprobe_events`
/// holds what it held.
#[test]
fn the_live_recorder_works_in_its_own_instance() {
    live_recorder_in_its_own_instance(fake_remove);
}

/// An instance another program holds open for a moment (EBUSY from
/// `rmdir`) is removed once it is free, and the recording succeeds.
#[test]
fn a_busy_instance_is_removed_once_it_is_free() {
    live_recorder_in_its_own_instance(busy_then_remove);
}

fn live_recorder_in_its_own_instance(remove: fn(&Path) -> std::io::Result<()>) {
    use copygen::tools::record::live::{record, InstanceOps, RecordOptions, Traced};
    use std::sync::atomic::AtomicBool;
    let f = fake("rep_movs_alternative", "a top-level line nobody may read\n");
    std::fs::write(f.root.join("kprobe_events"), "p:other/keep vfs_read\n").unwrap();
    instance_template(&f, &(0..4).map(call).collect::<String>());
    let stop = AtomicBool::new(false);
    let o = RecordOptions {
        tracefs: f.root.clone(),
        proc_dir: f.proc_dir.clone(),
        arch: Arch::X86_64,
        symbol: None,
        calls: 3,
        seconds: None,
        stop: &stop,
        target: Traced::All,
        instance_ops: InstanceOps {
            create: fake_create,
            remove,
        },
    };
    let rec = record(&o).unwrap();
    assert_eq!(rec.rows.len(), 3);
    assert_eq!(rec.ended, "--calls reached");
    let name = format!("copygen-{}", std::process::id());
    assert!(!f.root.join("instances").join(&name).exists(), "removed");
    let inst = f.root.join("instances").join(format!("removed-{name}"));
    let ev = inst.join("events/copygen/copygen_any");
    assert_eq!(std::fs::read_to_string(ev.join("enable")).unwrap(), "0");
    assert!(std::fs::read_to_string(ev.join("filter"))
        .unwrap()
        .starts_with("common_pid != "));
    // The top level: untouched.
    globals_as_before(&f.root);
    assert_eq!(f.enable("copygen_any"), "0");
    assert_eq!(
        std::fs::read_to_string(f.root.join("events/copygen/copygen_any/filter")).unwrap(),
        "none"
    );
    assert_eq!(
        std::fs::read_to_string(f.root.join("trace_pipe")).unwrap(),
        "a top-level line nobody may read\n"
    );
    assert_eq!(
        net_probes(&f.log()),
        BTreeSet::from(["other/keep".to_string()])
    );
}

/// `-- COMMAND` without instances: the command's shell sets the pid
/// filter and enables the events, the recording ends with the command,
/// its status is reported, and `set_event_pid` and `event-fork` read as
/// before; a live summary follows.
#[test]
fn a_command_is_recorded_and_the_top_level_put_back() {
    let f = fake("rep_movs_alternative", "");
    let pipe = f.root.join("trace_pipe");
    let cmd = format!(
        "cat \"$0/set_event_pid\" > \"$0/seen_pid\"; printf '%s' '{}' >> \"$0/trace_pipe\"; exit 3",
        call(9).replace('\'', "")
    );
    let o = f
        .cmd(&["--calls", "100", "--", "sh", "-c", &cmd])
        .arg(&f.root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("1 calls, the command ended; the command exited with exit status: 3"),
        "{e}"
    );
    assert!(e.contains("| size | calls | share |"), "{e}");
    assert!(e.contains("top callers: filemap_read (100.0%)"), "{e}");
    // The shell wrote its own pid; it became the command (same pid).
    let seen = std::fs::read_to_string(f.root.join("seen_pid")).unwrap();
    assert!(seen.trim().parse::<u32>().is_ok(), "{seen}");
    globals_as_before(&f.root);
    assert!(net_probes(&f.log()).is_empty());
    assert_eq!(f.enable("copygen_any"), "0");
    assert!(std::fs::read_to_string(&f.out)
        .unwrap()
        .ends_with("to,521,9,0,filemap_read\n"));
    drop(pipe);
}

/// `-p PID`: the process's threads go into `set_event_pid`, the recording
/// ends when the process does, and the settings read as before.
#[test]
fn a_pid_is_recorded_until_it_ends() {
    let f = fake("rep_movs_alternative", &call(1));
    let task = f.proc_dir.join("777/task");
    std::fs::create_dir_all(task.join("777")).unwrap();
    std::fs::create_dir_all(task.join("779")).unwrap();
    let child = f
        .cmd(&["-p", "777"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the pid filter", || {
        std::fs::read_to_string(f.root.join("set_event_pid")).unwrap() == "777 779"
    });
    assert_eq!(
        std::fs::read_to_string(f.root.join("options/event-fork")).unwrap(),
        "1"
    );
    std::fs::remove_dir_all(f.proc_dir.join("777")).unwrap();
    let o = wait_bounded(child, "-p after the process ended");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 calls, the process ended"),
        "{}",
        stderr(&o)
    );
    globals_as_before(&f.root);
    assert!(net_probes(&f.log()).is_empty());
    std::fs::write(f.root.join("kprobe_events"), "").unwrap();
    let o = f.run(&["-p", "4000000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("-p 4000000: no such process"),
        "{}",
        stderr(&o)
    );
    globals_as_before(&f.root);
}

/// The script's marker line takes the command's words as data: a `\n`
/// (which dash's echo turns into a newline) and a real newline stay on
/// the one line, and `--from-trace` reads the recording.
#[test]
fn the_script_writes_arguments_as_data() {
    let f = fake("rep_movs_alternative", "");
    let dir = f.root.parent().unwrap().to_path_buf();
    let s = script(&dir, &["--arch", "x86_64"]);
    let ks = dir.join("kallsyms");
    std::fs::write(&ks, "ffffffff81000000 T rep_movs_alternative\n").unwrap();
    let line = call(7);
    let o = Command::new("sh")
        .arg(&s)
        .arg(&f.out)
        .args(["sh", "-c"])
        .arg(format!(
            "printf '%s' '{}' >>\"$TRACEFS/trace\"",
            line.trim_end()
        ))
        .args(["a\\nb", "two\nlines", "-e", "\\c"])
        .env("TRACEFS", &f.root)
        .env("KALLSYMS", &ks)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = std::fs::read_to_string(&f.out).unwrap();
    let first = out.lines().next().unwrap();
    assert!(first.ends_with(" a\\nb two lines -e \\c"), "{out}");
    assert_eq!(out.lines().count(), 2, "{out}");
    let o = copygen()
        .args(["record", "--from-trace"])
        .arg(&f.out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    globals_as_before(&f.root);
}

/// The script in a kernel with instances: it makes `instances/copygen-PID`
/// (the fake's `mkdir` on PATH fills it as the kernel would), records
/// there, removes it, and leaves every top-level setting as it was.
#[test]
fn the_script_works_in_its_own_instance() {
    let f = fake("rep_movs_alternative", "");
    instance_template(&f, "");
    let dir = f.root.parent().unwrap().to_path_buf();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let t = dir.join("instance-template");
    for (name, body) in [
        (
            "mkdir",
            format!("#!/bin/sh\nexec cp -r '{}' \"$1\"\n", t.display()),
        ),
        (
            "rmdir",
            "#!/bin/sh\nexec mv \"$1\" \"$(dirname \"$1\")/removed-$(basename \"$1\")\"\n".into(),
        ),
    ] {
        let p = bin.join(name);
        std::fs::write(&p, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let s = script(&dir, &["--arch", "x86_64"]);
    let ks = dir.join("kallsyms");
    std::fs::write(&ks, "ffffffff81000000 T rep_movs_alternative\n").unwrap();
    let line = call(5);
    let o = Command::new("sh")
        .arg(&s)
        .arg(&f.out)
        .args(["sh", "-c"])
        .arg(format!(
            "printf '%s' '{}' >>\"$(dirname \"$(cat /dev/null; echo \"$TRACEFS\")\")/tracing/instances/copygen-$PPID/trace\"",
            line.trim_end()
        ))
        .env("TRACEFS", &f.root)
        .env("KALLSYMS", &ks)
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = std::fs::read_to_string(&f.out).unwrap();
    assert!(out.contains(line.trim_end()), "{out}");
    globals_as_before(&f.root);
    assert_eq!(
        f.enable("copygen_any"),
        "0",
        "the top level's switch untouched"
    );
    assert!(net_probes(&f.log()).is_empty() && f.log().contains("p:copygen/copygen_any"));
    let inst: Vec<_> = std::fs::read_dir(f.root.join("instances"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(inst.len(), 1, "{inst:?}");
    assert!(inst[0].starts_with("removed-copygen-"), "{inst:?}");
    let i = f.root.join("instances").join(&inst[0]);
    let read = |p: &str| std::fs::read_to_string(i.join(p)).unwrap();
    assert_eq!(read("buffer_size_kb"), "8192\n");
    assert_eq!(read("options/overwrite").trim(), "0");
    assert_eq!(read("events/copygen/copygen_any/enable").trim(), "0");
}
