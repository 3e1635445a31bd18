//! Recording the running kernel: the probes of [`super::definitions`] go
//! into `kprobe_events` (appended, never truncated: other tools' probes stay),
//! each gets a pid filter that leaves out copygen's own reads of
//! `trace_pipe`, is enabled, and `trace_pipe` is read until enough calls,
//! enough seconds, or a signal's flag. What was added is removed on every
//! way out by [`ProbeGuard`]: explicitly at the end (its errors reported),
//! and by its `Drop` on an error or a panic.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::kallsyms::Kallsyms;
use super::parse::{Line, Parser};
use super::{definitions, pick, ProbeDef, Row, GROUP};
use crate::arch::kernel_copy_symbols::{probes, CopyProbe};
use crate::front::diagnostics::escape;
use crate::front::strategy::Arch;

/// The environment cannot be recorded in (exit 2): the message says why
/// and what to do instead.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

fn refuse(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Refused(msg.into()))
}

pub struct Options<'a> {
    /// The tracefs mount (`/sys/kernel/tracing`).
    pub tracefs: PathBuf,
    /// Where `kallsyms`, `cpuinfo` and `sys/kernel/osrelease` are (`/proc`).
    pub proc_dir: PathBuf,
    pub arch: Arch,
    pub symbol: Option<String>,
    pub calls: usize,
    pub seconds: Option<f64>,
    /// Set by the signal handler; the reader loop stops when it is.
    pub stop: &'a AtomicBool,
}

/// What a recording got.
#[derive(Debug)]
pub struct Recording {
    pub probe: &'static CopyProbe,
    pub rows: Vec<Row>,
    pub lost: u64,
    pub no_user_side: usize,
    /// Why the loop ended.
    pub ended: &'static str,
    /// Facts for the trace's header comments and the terminal.
    pub notes: Vec<String>,
    pub release: Option<String>,
}

/// Removes the probes it was told about: disables the enabled ones, then
/// deletes every added one from `kprobe_events`.
pub struct ProbeGuard {
    root: PathBuf,
    added: Vec<String>,
    enabled: Vec<String>,
}

fn write_file(path: &Path, text: &str, append: bool) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .append(append)
        .custom_flags(libc::O_NOCTTY)
        .open(path)?;
    f.write_all(text.as_bytes())
}

impl ProbeGuard {
    pub fn new(root: &Path) -> ProbeGuard {
        ProbeGuard {
            root: root.to_path_buf(),
            added: Vec::new(),
            enabled: Vec::new(),
        }
    }

    fn event_file(&self, event: &str, file: &str) -> PathBuf {
        self.root.join("events").join(GROUP).join(event).join(file)
    }

    /// Append a probe definition; on success it is the guard's to remove.
    pub fn add(&mut self, def: &ProbeDef) -> Result<()> {
        write_file(&self.root.join("kprobe_events"), &format!("{}\n", def.line), true)
            .map_err(|e| {
                refuse(format!(
                    "the kernel refused the probe `{}`: {e} ({} may be inlined, blacklisted for kprobes, or absent: try another --symbol)",
                    def.line, def.symbol
                ))
            })?;
        self.added.push(def.event.clone());
        Ok(())
    }

    pub fn filter(&self, event: &str, filter: &str) -> Result<()> {
        let path = self.event_file(event, "filter");
        write_file(&path, &format!("{filter}\n"), false)
            .with_context(|| format!("{}: cannot write the filter", path.display()))
    }

    pub fn enable(&mut self, event: &str) -> Result<()> {
        let path = self.event_file(event, "enable");
        // Counted first: a write that fails half-way is undone as well.
        self.enabled.push(event.to_string());
        write_file(&path, "1", false)
            .with_context(|| format!("{}: cannot enable the event", path.display()))
    }

    /// Disable the enabled events (they stay defined; one that would not
    /// disable is tried again by [`Self::cleanup`]); the errors of the
    /// writes that failed.
    pub fn disable(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for e in std::mem::take(&mut self.enabled) {
            let path = self.event_file(&e, "enable");
            if let Err(err) = write_file(&path, "0", false) {
                errors.push(format!("{}: {err}", path.display()));
                self.enabled.push(e);
            }
        }
        errors
    }

    /// Undo everything; the errors of the steps that failed.
    pub fn cleanup(&mut self) -> Vec<String> {
        let mut errors = self.disable();
        for e in std::mem::take(&mut self.added).iter().rev() {
            let path = self.root.join("kprobe_events");
            if let Err(err) = write_file(&path, &format!("-:{GROUP}/{e}\n"), true) {
                errors.push(format!(
                    "{}: could not remove {GROUP}/{e} ({err}): remove it with `echo '-:{GROUP}/{e}' >> {}`",
                    path.display(),
                    path.display()
                ));
            }
        }
        errors
    }
}

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        for e in self.cleanup() {
            crate::output::write::to_stderr(format_args!("copygen record: {e}\n"));
        }
    }
}

/// `trace_pipe`, opened non-blocking, and the partial line read so far.
struct PipeReader<'k> {
    pipe: std::fs::File,
    origin: String,
    parser: Parser<'k>,
    pending: Vec<u8>,
    line: usize,
}

impl PipeReader<'_> {
    /// Wait up to `ms` milliseconds for something to read.
    fn poll(&self, ms: libc::c_int) {
        let mut pfd = libc::pollfd {
            fd: self.pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut pfd, 1, ms) };
    }

    /// One read of the pipe, its complete lines parsed into `rec` (rows
    /// beyond `calls` are dropped). `Some(bytes)`, or `None` when nothing
    /// was there to read (`EAGAIN`) or a signal interrupted the read.
    fn read_some(&mut self, rec: &mut Recording, calls: usize) -> Result<Option<usize>> {
        let mut buf = [0u8; 1 << 16];
        let got = match self.pipe.read(&mut buf) {
            Ok(k) => k,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::Interrupted =>
            {
                return Ok(None)
            }
            Err(e) => return Err(anyhow!("{}: read failed: {e}", escape(&self.origin, false))),
        };
        self.pending.extend_from_slice(&buf[..got]);
        while let Some(nl) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=nl).collect();
            self.line += 1;
            let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            match self.parser.line(self.line, &text)? {
                Line::Call(r) if rec.rows.len() < calls => rec.rows.push(r),
                Line::Call(_) | Line::Skipped => {}
                Line::Lost(k) => rec.lost += k,
                Line::NoUserSide => rec.no_user_side += 1,
            }
        }
        Ok(Some(got))
    }
}

/// Function names the kernel can probe: `available_filter_functions`, else
/// kallsyms' text symbols.
fn probeable(root: &Path, arch: Arch, kallsyms: Option<&Kallsyms>) -> Option<HashSet<String>> {
    if let Ok(text) = crate::input::read_string(&root.join("available_filter_functions")) {
        return Some(
            text.lines()
                .filter_map(|l| l.split_whitespace().next())
                .map(str::to_string)
                .collect(),
        );
    }
    let k = kallsyms?;
    Some(
        probes(arch)
            .probes
            .iter()
            .flat_map(|p| p.symbols)
            .filter(|s| k.has(s.symbol))
            .map(|s| s.symbol.to_string())
            .collect(),
    )
}

const FSRM_NOTE: &str = "this CPU has FSRM: Linux 6.4 and later run `rep movsb` inline on it and never call rep_movs_alternative";

/// Which probe to use, or why none.
fn choose(
    o: &Options,
    have: Option<&HashSet<String>>,
    fsrm: bool,
    notes: &mut Vec<String>,
) -> Result<&'static CopyProbe> {
    let table = probes(o.arch);
    let present =
        |p: &CopyProbe| have.is_none_or(|h| p.symbols.iter().all(|s| h.contains(s.symbol)));
    let probe = match &o.symbol {
        Some(name) => {
            let p = pick(o.arch, name).map_err(|e| refuse(e.to_string()))?;
            if p.name == "rep_movs_alternative" && fsrm {
                return Err(refuse(format!(
                    "{FSRM_NOTE}. Record --symbol _copy_user instead (the sizes are then the callers' whole requests), or record in a kernel on a CPU without FSRM (qemu -cpu max,fsrm=off: verify/kernel-record)"
                )));
            }
            if !present(p) {
                let missing: Vec<&str> = p.symbols.iter().map(|s| s.symbol).collect();
                return Err(refuse(format!(
                    "{} is not in the running kernel (not in available_filter_functions or kallsyms): this kernel inlines it or does not have it; copygen knows: {}",
                    missing.join(", "),
                    super::symbol_list(table)
                )));
            }
            p
        }
        None => {
            let Some(have) = have else {
                return Err(refuse(
                    "cannot tell which copy routine the kernel has (no available_filter_functions, kallsyms unreadable): name one with --symbol",
                ));
            };
            if have.contains("copygen_copy_user") {
                return Err(refuse(
                    "the kernel is copygen-patched (copygen_copy_user): name its convention, --symbol copygen_copy_user (C) or --symbol copygen_copy_user:rep_movs",
                ));
            }
            let mut found = None;
            for p in table.probes {
                if p.name == "rep_movs_alternative" && fsrm && have.contains(p.name) {
                    notes.push(format!("{FSRM_NOTE}: recording _copy_{{from,to}}_user"));
                    continue;
                }
                if p.symbols.iter().all(|s| have.contains(s.symbol)) {
                    found = Some(p);
                    break;
                }
            }
            found.ok_or_else(|| {
                refuse(format!(
                    "the running kernel has none of the copy routines copygen knows on {}: {}",
                    o.arch,
                    super::symbol_list(table)
                ))
            })?
        }
    };
    if probe.whole_request {
        notes.push(format!(
            "{}: the sizes are the callers' whole requests, not the copies the routine made",
            probe.name
        ));
    }
    Ok(probe)
}

/// Record until `calls`, `seconds` or the stop flag.
pub fn record(o: &Options) -> Result<Recording> {
    let root = &o.tracefs;
    let shown = escape(&root.display().to_string(), false).into_owned();
    if !root.join("kprobe_events").exists() {
        if root.join("trace").exists() {
            return Err(refuse(format!(
                "{shown} has no kprobe_events: the kernel is built without CONFIG_KPROBE_EVENTS; rebuild it with CONFIG_KPROBES and CONFIG_KPROBE_EVENTS, or record in one that has them (verify/kernel-record)"
            )));
        }
        return Err(refuse(format!(
            "tracefs is not mounted at {shown}: mount it (as root: mount -t tracefs nodev {shown}), or name the mount with --tracefs"
        )));
    }
    let mut notes = Vec::new();
    let kallsyms = match crate::input::read_string(&o.proc_dir.join("kallsyms")) {
        Ok(text) => Kallsyms::parse("kallsyms", &text)?,
        Err(_) => None,
    };
    if kallsyms.is_none() {
        notes.push("kallsyms hides its addresses (or is unreadable): callers left empty".into());
    }
    let fsrm = o.arch == Arch::X86_64
        && crate::input::read_string(&o.proc_dir.join("cpuinfo")).is_ok_and(|t| {
            t.lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|w| w == "fsrm"))
        });
    let have = probeable(root, o.arch, kallsyms.as_ref());
    let probe = choose(o, have.as_ref(), fsrm, &mut notes)?;
    let existing = crate::input::read_string(&root.join("kprobe_events")).map_err(|e| {
        refuse(format!(
            "{shown}/kprobe_events: cannot read: {e} (run as root)"
        ))
    })?;
    if existing.lines().any(|l| {
        l.get(1..)
            .is_some_and(|r| r.starts_with(&format!(":{GROUP}/")))
    }) {
        return Err(refuse(format!(
            "{shown}/kprobe_events already holds probes of group {GROUP} (another copygen record, or one killed with SIGKILL): remove them with `echo '-:{GROUP}/NAME' >> {shown}/kprobe_events`"
        )));
    }
    let release = crate::input::read_string(&o.proc_dir.join("sys/kernel/osrelease"))
        .ok()
        .map(|s| s.trim().to_string());

    let defs = definitions(probes(o.arch), probe);
    let mut guard = ProbeGuard::new(root);
    for d in &defs {
        guard.add(d)?;
    }
    let me = std::process::id();
    for d in &defs {
        guard.filter(&d.event, &format!("common_pid != {me}"))?;
    }
    for d in &defs {
        guard.enable(&d.event)?;
    }
    let pipe_path = root.join("trace_pipe");
    let origin = pipe_path.display().to_string();
    let pipe = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&pipe_path)
        .with_context(|| format!("{}: cannot open", escape(&origin, false)))?;
    let parser = Parser::new(&origin, Some(o.arch), kallsyms.as_ref());
    let start = Instant::now();
    let mut rec = Recording {
        probe,
        rows: Vec::new(),
        lost: 0,
        no_user_side: 0,
        ended: "",
        notes,
        release,
    };
    let mut reader = PipeReader {
        pipe,
        origin,
        parser,
        pending: Vec::new(),
        line: 0,
    };
    rec.ended = loop {
        if o.stop.load(Ordering::SeqCst) {
            break "stopped by a signal";
        }
        if rec.rows.len() >= o.calls {
            break "--calls reached";
        }
        if o.seconds
            .is_some_and(|s| start.elapsed().as_secs_f64() >= s)
        {
            break "--seconds reached";
        }
        reader.poll(100);
        if reader.read_some(&mut rec, o.calls)? == Some(0) {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // What the kernel wrote before the events were disabled is still in the
    // ring buffer: read it, so a signal or --seconds loses no call.
    let errors = guard.disable();
    if !errors.is_empty() {
        return Err(anyhow!("disabling the probes: {}", errors.join("; ")));
    }
    while rec.rows.len() < o.calls {
        match reader.read_some(&mut rec, o.calls)? {
            Some(0) | None => break,
            Some(_) => {}
        }
    }
    drop(reader);
    let errors = guard.cleanup();
    if !errors.is_empty() {
        return Err(anyhow!("removing the probes: {}", errors.join("; ")));
    }
    Ok(rec)
}
