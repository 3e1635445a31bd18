//! `copygen record`: a running kernel's copy-routine calls as a workload
//! trace (tracefs kprobe events), the same probes as a sh script for a
//! machine copygen does not run on (`--script`), that script's output
//! converted (`--from-trace`), and a trace's histograms (`--summary`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use copygen::front::diagnostics::escape;
use copygen::front::strategy::Arch;
use copygen::input::BadInput;
use copygen::tools::record::kallsyms::Kallsyms;
use copygen::tools::record::live;
use copygen::tools::record::parse::{no_calls_why, parse_bytes};
use copygen::tools::record::{pick, script, summary, to_csv};
use copygen::tools::trace::{Trace, MAX_CALLS};

use super::{parse_arch, write_stdout, Failure};

#[derive(clap::Args)]
pub struct RecordArgs {
    /// Stop after this many calls.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    calls: usize,
    /// Stop after this many seconds (otherwise at --calls, or Ctrl-C).
    #[arg(long, value_name = "S")]
    seconds: Option<f64>,
    /// The copy routine to probe (`copygen record --script --symbol list`
    /// names them), or routines of both directions named with their
    /// calling convention, `NAME[,NAME...]:CONVENTION` (a per-CPU kernel's
    /// variant routines); by default the first the running kernel calls.
    #[arg(long, value_name = "NAME")]
    symbol: Option<String>,
    /// Write the trace here (default: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The tracefs mount.
    #[arg(long, value_name = "DIR", default_value = "/sys/kernel/tracing")]
    tracefs: PathBuf,
    /// Where kallsyms, cpuinfo and sys/kernel/osrelease are read.
    #[arg(long, value_name = "DIR", default_value = "/proc", hide = true)]
    proc_dir: PathBuf,
    /// The recorded kernel's arch (default: this machine's; --script:
    /// x86_64).
    #[arg(long)]
    arch: Option<String>,
    /// Print a POSIX sh script that records a command with the same probes.
    #[arg(long, conflicts_with_all = ["from_trace", "summary"])]
    script: bool,
    /// Convert the text a --script run wrote (or any `trace`/`trace_pipe`
    /// text of these probes) into a workload trace.
    #[arg(long, value_name = "FILE", conflicts_with = "summary")]
    from_trace: Option<PathBuf>,
    /// --from-trace: name callers through this kallsyms or System.map.
    #[arg(long, value_name = "FILE", requires = "from_trace")]
    kallsyms: Option<PathBuf>,
    /// --from-trace: a comment line for the trace's header (repeatable).
    #[arg(long, value_name = "TEXT", requires = "from_trace")]
    note: Vec<String>,
    /// Print the histograms of a workload trace (sizes, distances, callers).
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// Record only this process, its threads and the children it starts;
    /// the recording ends when it does.
    #[arg(short = 'p', long = "pid", value_name = "PID", conflicts_with_all = ["script", "from_trace", "summary"])]
    pid: Option<u32>,
    /// Run this command and record only it and its children; the recording
    /// ends when it does.
    #[arg(last = true, value_name = "COMMAND", conflicts_with_all = ["pid", "script", "from_trace", "summary"])]
    command: Vec<std::ffi::OsString>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM only set [`STOP`]; no SA_RESTART, so a blocked call
/// returns and the reader loop sees the flag.
fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a handler that only stores to an
        // atomic is valid; sigemptyset initialises the mask.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

fn emit(output: Option<&Path>, text: &str) -> Result<(), Failure> {
    match output {
        Some(p) => copygen::output::write::write_file(p, text)?,
        None => {
            write_stdout(text.as_bytes())?;
        }
    }
    Ok(())
}

fn host_arch() -> Result<Arch, Failure> {
    if cfg!(target_arch = "x86_64") {
        Ok(Arch::X86_64)
    } else {
        Err(Failure::Input(BadInput(
            "error: name the recorded kernel's arch with --arch".into(),
        )))
    }
}

pub fn cmd_record(a: RecordArgs) -> Result<ExitCode, Failure> {
    let arch = parse_arch(a.arch.clone())?;
    if a.calls == 0 || a.calls > MAX_CALLS {
        return Err(Failure::Input(BadInput(format!(
            "error: --calls {}: 1 to {MAX_CALLS}, the most a workload trace holds",
            a.calls
        ))));
    }
    if let Some(s) = a.seconds {
        if !(s.is_finite() && s > 0.0) {
            return Err(Failure::Input(BadInput(format!(
                "error: --seconds {s}: a positive number"
            ))));
        }
    }
    if let Some(path) = &a.summary {
        let trace = Trace::load(path).map_err(|e| Failure::Input(BadInput(e.to_string())))?;
        return write_stdout(summary::summary(&trace).as_bytes());
    }
    if a.script {
        let arch = arch.unwrap_or(Arch::X86_64);
        let table = copygen::kernel::copy_symbols::probes(arch);
        let probe = match a.symbol.as_deref() {
            Some("list") => {
                let mut s = String::new();
                for p in table.probes {
                    for sym in p.symbols.iter() {
                        s.push_str(&format!("{:<28} {:<24} {}\n", p.name, sym.symbol, sym.note));
                    }
                }
                for c in table.conventions {
                    let form = format!("NAME[,NAME...]:{}", c.name);
                    s.push_str(&format!(
                        "{form:<28} {:<24} a routine of both directions, {}\n",
                        "(named)", c.note
                    ));
                }
                return write_stdout(s.as_bytes());
            }
            Some(name) => {
                pick(arch, name).map_err(|e| Failure::Input(BadInput(format!("error: {e}"))))?
            }
            None => table
                .probes
                .iter()
                .find(|p| !p.name.starts_with(copygen::kernel::symbols::GLUE_SYMBOL))
                .expect("every arch has a stock copy routine")
                .clone(),
        };
        emit(a.output.as_deref(), &script::script(arch, &probe))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &a.from_trace {
        let origin = path.display().to_string();
        let text = copygen::input::read_bytes(path).map_err(|e| {
            Failure::Input(BadInput(format!("{}: error: {e}", escape(&origin, false))))
        })?;
        let kallsyms = match &a.kallsyms {
            Some(k) => {
                let shown = k.display().to_string();
                let t = copygen::input::read_bytes(k).map_err(|e| {
                    Failure::Input(BadInput(format!("{}: error: {e}", escape(&shown, false))))
                })?;
                let parsed = Kallsyms::parse_bytes(&shown, &t)
                    .map_err(|e| Failure::Input(BadInput(e.to_string())))?;
                if parsed.is_none() {
                    return Err(Failure::Input(BadInput(format!(
                        "{}: error: every address is 0 (read as a user kptr_restrict hides them from): use the build's System.map, or read kallsyms as root",
                        escape(&shown, false)
                    ))));
                }
                parsed
            }
            None => None,
        };
        let p = parse_bytes(&origin, &text, arch, kallsyms.as_ref(), a.calls)?;
        if p.rows.is_empty() {
            return Err(Failure::Input(BadInput(format!(
                "{}: error: no calls of copygen's probes in it{}",
                escape(&origin, false),
                no_calls_why(p.hits, p.arch)
            ))));
        }
        let mut comments = a.note.clone();
        let total = p.rows.len() + p.dropped;
        let name = path
            .file_name()
            .map_or(origin.clone(), |n| n.to_string_lossy().into_owned());
        let mut line = format!("copygen record --from-trace {name}: {} calls", p.rows.len());
        if p.dropped > 0 {
            line.push_str(&format!(" (the first of {total}: --calls {})", a.calls));
        }
        if p.lost > 0 {
            line.push_str(&format!("; the ring buffer lost {} events", lost(p.lost)));
        }
        if p.no_user_side > 0 {
            line.push_str(&format!(
                "; {} calls with no user side left out",
                p.no_user_side
            ));
        }
        comments.push(escape(&line, false).into_owned());
        errln!("{line}");
        emit(a.output.as_deref(), &to_csv(&comments, &p.rows))?;
        return Ok(ExitCode::SUCCESS);
    }
    let arch = match arch {
        Some(a) => a,
        None => host_arch()?,
    };
    catch_signals();
    let opts = live::RecordOptions {
        tracefs: a.tracefs.clone(),
        proc_dir: a.proc_dir.clone(),
        arch,
        symbol: a.symbol.clone(),
        calls: a.calls,
        seconds: a.seconds,
        stop: &STOP,
        target: match (a.pid, a.command.is_empty()) {
            (Some(pid), _) => live::Traced::Pid(pid),
            (None, false) => live::Traced::Command(a.command.clone()),
            (None, true) => live::Traced::All,
        },
        instance_ops: live::InstanceOps::KERNEL,
    };
    errln!(
        "copygen record: probing {} (Ctrl-C to stop)",
        escape(&a.tracefs.display().to_string(), false)
    );
    let rec = live::record(&opts)?;
    if rec.rows.is_empty() {
        return Err(Failure::Other(anyhow::anyhow!(
            "no calls recorded ({}); nothing written",
            rec.ended
        )));
    }
    let mut line = format!(
        "copygen record --symbol {} on {} {}: {} calls, {}",
        rec.probe.name,
        arch,
        rec.release
            .as_deref()
            .map_or("Linux".into(), |r| format!("Linux {}", escape(r, false))),
        rec.rows.len(),
        rec.ended
    );
    if let Some(status) = rec.status {
        line.push_str(&format!("; the command exited with {status}"));
    }
    if rec.lost > 0 {
        line.push_str(&format!("; the ring buffer lost {} events", lost(rec.lost)));
    }
    if rec.no_user_side > 0 {
        line.push_str(&format!(
            "; {} calls with no user side left out",
            rec.no_user_side
        ));
    }
    for n in &rec.notes {
        errln!("copygen record: {n}");
    }
    errln!("{line}");
    let mut comments = vec![line];
    comments.extend(rec.notes.iter().cloned());
    let csv = to_csv(&comments, &rec.rows);
    emit(a.output.as_deref(), &csv)?;
    // The histograms `--summary` prints, of the trace as written (read
    // back: what it shows is what the file holds).
    let name = a
        .output
        .as_deref()
        .and_then(Path::file_stem)
        .map_or("recorded".into(), |n| n.to_string_lossy().into_owned());
    match Trace::parse(&name, &name, &csv) {
        Ok(trace) => errln!("\n{}", summary::summary(&trace).trim_end()),
        Err(e) => errln!("copygen record: the trace written does not read back: {e}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// A count of lost events; one that saturated says so.
fn lost(k: u64) -> String {
    if k == u64::MAX {
        format!("at least {k}")
    } else {
        k.to_string()
    }
}
