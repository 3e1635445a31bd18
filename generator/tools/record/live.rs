//! Recording the running kernel without disturbing its other tracing
//! users. The probes of [`super::definitions`] go into the top-level
//! `kprobe_events` (appended, never truncated: other tools' probes stay);
//! everything else happens in a private tracefs instance,
//! `instances/copygen-PID`, made for the run where the kernel has
//! instances: the events are enabled there, with a filter that leaves out
//! copygen's own reads of `trace_pipe` (and, with `-p PID` or a command,
//! the instance's `set_event_pid`), and that instance's `trace_pipe` is
//! read, so the top-level buffer, `tracing_on` and every other global
//! setting stay as they were. Without instances it works in the top level
//! and saves every setting it changes beforehand. Reading stops at enough
//! calls, enough seconds, the end of the traced process, or a signal's
//! flag. [`ProbeGuard`] undoes all of it on every way out: explicitly at
//! the end (its errors reported), and by its `Drop` on an error or a panic.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::kallsyms::Kallsyms;
use super::parse::{Parser, TraceLine};
use super::{definitions, pick, ProbeDef, Row, GROUP};
use crate::front::diagnostics::escape;
use crate::front::strategy::Arch;
use crate::input::BadInput;
use crate::kernel::copy_symbols::{probes, CopyProbe};
use crate::kernel::symbols::{GLUE_SYMBOL, REP_MOVS_ALTERNATIVE};

/// The environment cannot be recorded in ([`BadInput`], exit 2): the
/// message says why and what to do instead.
fn refuse(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(format!("error: {}", msg.into())))
}

/// How an instance folder is made and removed: `mkdir` and `rmdir` on
/// tracefs, where the kernel fills the new folder with the instance's files
/// and removes them with it. Tests give a fake tracefs's own.
#[derive(Clone, Copy)]
pub struct InstanceOps {
    pub create: fn(&Path) -> std::io::Result<()>,
    pub remove: fn(&Path) -> std::io::Result<()>,
}

impl InstanceOps {
    /// tracefs's.
    pub const KERNEL: InstanceOps = InstanceOps {
        create: |p| std::fs::create_dir(p),
        remove: |p| std::fs::remove_dir(p),
    };
}

/// How long removing the instance is retried while the kernel says it is
/// busy: `rmdir` of an instance fails with EBUSY while any file of it is
/// open, and another program reading one (`cat
/// instances/copygen-PID/events/copygen/*/enable`, whose own copy to user
/// space the probes record) holds it only for that read.
const BUSY_RETRIES: u32 = 40;
const BUSY_WAIT: Duration = Duration::from_millis(25);

/// `ops.remove` of the instance at `path`, tried again while it is busy
/// (for up to [`BUSY_RETRIES`] × [`BUSY_WAIT`]); the last error.
fn remove_instance(ops: InstanceOps, path: &Path) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match (ops.remove)(path) {
            Err(e) if e.kind() == std::io::ErrorKind::ResourceBusy && tries < BUSY_RETRIES => {
                tries += 1;
                std::thread::sleep(BUSY_WAIT);
            }
            other => return other,
        }
    }
}

/// Which processes to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Traced {
    /// Every process but copygen.
    All,
    /// One process, its threads and the children it forks while recorded
    /// (`-p PID`); the recording ends when it does.
    Pid(u32),
    /// A command copygen starts, and its children (`-- COMMAND`); the
    /// recording ends when it does.
    Command(Vec<OsString>),
}

/// How long the final read of what the ring buffer holds may take: a
/// tracefs whose `trace_pipe` never runs dry (a stuck or hostile one) does
/// not hold the recorder, and its probes, for longer.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// The longest line read from `trace_pipe`: the probes' lines are a few
/// hundred bytes; a longer one is not theirs, and is not buffered further.
pub const MAX_LINE: usize = 64 << 10;

pub struct RecordOptions<'a> {
    /// The tracefs mount (`/sys/kernel/tracing`).
    pub tracefs: PathBuf,
    /// Where `kallsyms`, `cpuinfo` and `sys/kernel/osrelease` are (`/proc`).
    pub proc_dir: PathBuf,
    pub arch: Arch,
    pub symbol: Option<String>,
    pub calls: usize,
    pub seconds: Option<f64>,
    /// Set by the signal handler; the reader loop stops when it is, and
    /// the final drain when it is set again.
    pub stop: &'a AtomicBool,
    pub target: Traced,
    pub instance_ops: InstanceOps,
}

/// What a recording got.
#[derive(Debug)]
pub struct Recording {
    pub probe: CopyProbe,
    pub rows: Vec<Row>,
    pub lost: u64,
    pub no_user_side: usize,
    /// Why the loop ended.
    pub ended: &'static str,
    /// Facts for the trace's header comments and the terminal.
    pub notes: Vec<String>,
    pub release: Option<String>,
    /// The command's exit status (`-- COMMAND`), where it ended.
    pub status: Option<std::process::ExitStatus>,
}

/// Undoes what a recording did: disables the enabled events, puts back the
/// settings it changed, removes the instance it made, then deletes every
/// added probe from `kprobe_events`.
pub struct ProbeGuard {
    /// The tracefs mount: `kprobe_events` is there.
    root: PathBuf,
    /// Where the events are enabled and read: the instance, or `root`.
    here: PathBuf,
    /// The instance made for the run, and how to remove it.
    instance: Option<InstanceOps>,
    added: Vec<String>,
    enabled: Vec<String>,
    /// Settings changed, with what they held before (in order of change).
    saved: Vec<(PathBuf, String)>,
}

fn write_file(path: &Path, text: &str, append: bool) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .append(append)
        .truncate(!append)
        .custom_flags(libc::O_NOCTTY)
        .open(path)?;
    f.write_all(text.as_bytes())
}

impl ProbeGuard {
    /// A guard working in the top level of `root`.
    pub fn new(root: &Path) -> ProbeGuard {
        ProbeGuard {
            root: root.to_path_buf(),
            here: root.to_path_buf(),
            instance: None,
            added: Vec::new(),
            enabled: Vec::new(),
            saved: Vec::new(),
        }
    }

    /// Make the instance `instances/NAME` and work in it from now on; it is
    /// the guard's to remove.
    pub fn use_instance(&mut self, name: &str, ops: InstanceOps) -> Result<()> {
        let path = self.root.join("instances").join(name);
        (ops.create)(&path).map_err(|e| {
            refuse(format!(
                "cannot make the tracefs instance {}: {e}{}",
                escape(&path.display().to_string(), false),
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    " (another recorder of this pid, in another pid namespace, or one killed with SIGKILL: remove it with rmdir)"
                } else {
                    " (run as root)"
                }
            ))
        })?;
        self.here = path;
        self.instance = Some(ops);
        Ok(())
    }

    /// Where events are enabled and read.
    pub fn here(&self) -> &Path {
        &self.here
    }

    fn event_file(&self, event: &str, file: &str) -> PathBuf {
        self.here.join("events").join(GROUP).join(event).join(file)
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

    /// Write a setting of the instance (or, without one, of the top level)
    /// after keeping what it held, which [`Self::cleanup`] writes back.
    pub fn set(&mut self, file: &str, value: &str) -> Result<()> {
        let path = self.here.join(file);
        let before = crate::input::read_string(&path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        self.saved.push((path.clone(), before));
        write_file(&path, value, false).with_context(|| format!("{}: cannot write", path.display()))
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
        while let Some((path, before)) = self.saved.pop() {
            // `set_event_pid` lists one pid a line; it takes them separated
            // by blanks, and an empty write (with O_TRUNC) clears it.
            if let Err(err) = write_file(&path, &before, false) {
                errors.push(format!(
                    "{}: could not put back `{}` ({err})",
                    path.display(),
                    escape(before.trim_end(), false)
                ));
            }
        }
        if let Some(ops) = self.instance.take() {
            if let Err(err) = remove_instance(ops, &self.here) {
                errors.push(format!(
                    "{}: could not remove the instance ({err}): remove it with `rmdir {}`",
                    self.here.display(),
                    self.here.display()
                ));
            }
        }
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

/// `trace_pipe`, opened non-blocking, and the partial line read so far
/// (at most [`MAX_LINE`] bytes).
struct PipeReader<'k> {
    pipe: std::fs::File,
    origin: String,
    parser: Parser<'k>,
    pending: Vec<u8>,
    /// How much of `pending` holds no newline: each byte is looked at once.
    scanned: usize,
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
        let mut start = 0;
        while let Some(nl) = self.pending[self.scanned..]
            .iter()
            .position(|&b| b == b'\n')
        {
            let end = self.scanned + nl;
            self.line += 1;
            let text = String::from_utf8_lossy(&self.pending[start..end]).into_owned();
            start = end + 1;
            self.scanned = start;
            match self.parser.line(self.line, &text)? {
                TraceLine::Call(r) if rec.rows.len() < calls => rec.rows.push(r),
                TraceLine::Call(_) | TraceLine::Skipped => {}
                TraceLine::Lost(k) => rec.lost = rec.lost.saturating_add(k),
                TraceLine::NoUserSide => rec.no_user_side += 1,
            }
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len();
        if self.pending.len() > MAX_LINE {
            return Err(anyhow::Error::new(BadInput(format!(
                "{}:{}:1: error: a line of more than {MAX_LINE} bytes: not a trace event line of copygen's probes",
                escape(&self.origin, false),
                self.line + 1
            ))));
        }
        Ok(Some(got))
    }
}

/// Function names the kernel can probe: `available_filter_functions` (the
/// functions ftrace can trace) and kallsyms' copy routines. A kprobe takes
/// any text symbol, and an assembly routine (`rep_movs_alternative`,
/// copygen's own) calls no ftrace hook, so it is not in the first.
fn probeable(
    root: &Path,
    arch: Arch,
    probe_named: Option<&CopyProbe>,
    kallsyms: Option<&Kallsyms>,
) -> Option<HashSet<String>> {
    let traced = crate::input::read_string(&root.join("available_filter_functions")).ok();
    if traced.is_none() && kallsyms.is_none() {
        return None;
    }
    let mut have: HashSet<String> = traced
        .iter()
        .flat_map(|t| t.lines())
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    if let Some(k) = kallsyms {
        let table = probes(arch).probes.iter().flat_map(|p| p.symbols.iter());
        let named = probe_named.into_iter().flat_map(|p| p.symbols.iter());
        have.extend(
            table
                .chain(named)
                .filter(|s| k.has(&s.symbol))
                .map(|s| s.symbol.to_string()),
        );
    }
    Some(have)
}

const FSRM_NOTE: &str = "this CPU has FSRM: Linux 6.4 and later run `rep movsb` inline on it and never call rep_movs_alternative";

/// Which probe to use, or why none.
fn choose(
    arch: Arch,
    named: Option<CopyProbe>,
    have: Option<&HashSet<String>>,
    fsrm: bool,
    notes: &mut Vec<String>,
) -> Result<CopyProbe> {
    let table = probes(arch);
    let probe = match named {
        Some(p) => {
            if p.name == REP_MOVS_ALTERNATIVE && fsrm {
                return Err(refuse(format!(
                    "{FSRM_NOTE}. Record --symbol _copy_user instead (the sizes are then the callers' whole requests), or record in a kernel on a CPU without FSRM (qemu -cpu max,fsrm=off: verify/kernel-record)"
                )));
            }
            let missing: Vec<&str> = p
                .symbols
                .iter()
                .map(|s| &*s.symbol)
                .filter(|s| have.is_some_and(|h| !h.contains(*s)))
                .collect();
            if !missing.is_empty() {
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
            if have.contains(GLUE_SYMBOL) {
                return Err(refuse(format!(
                    "the kernel is copygen-patched ({GLUE_SYMBOL}): name its convention, --symbol {GLUE_SYMBOL} (C) or --symbol {GLUE_SYMBOL}:rep_movs",
                )));
            }
            let mut found = None;
            for p in table.probes {
                if p.name == REP_MOVS_ALTERNATIVE && fsrm && have.contains(&*p.name) {
                    notes.push(format!("{FSRM_NOTE}: recording _copy_{{from,to}}_user"));
                    continue;
                }
                if p.symbols.iter().all(|s| have.contains(&*s.symbol)) {
                    found = Some(p.clone());
                    break;
                }
            }
            found.ok_or_else(|| {
                refuse(format!(
                    "the running kernel has none of the copy routines copygen knows on {arch}: {}",
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
pub fn record(o: &RecordOptions) -> Result<Recording> {
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
    let named = match &o.symbol {
        Some(name) => Some(pick(o.arch, name).map_err(|e| refuse(e.to_string()))?),
        None => None,
    };
    let have = probeable(root, o.arch, named.as_ref(), kallsyms.as_ref());
    let probe = choose(o.arch, named, have.as_ref(), fsrm, &mut notes)?;
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

    let defs = definitions(probes(o.arch), &probe);
    let mut guard = ProbeGuard::new(root);
    let me = std::process::id();
    if root.join("instances").is_dir() {
        guard.use_instance(&format!("{GROUP}-{me}"), o.instance_ops)?;
    } else {
        notes.push(
            "this tracefs has no instances: recorded in its top level, which reading trace_pipe empties for every other reader; the settings changed were put back".into(),
        );
    }
    let here = guard.here().to_path_buf();
    for d in &defs {
        guard.add(d)?;
    }
    for d in &defs {
        guard.filter(&d.event, &format!("common_pid != {me}"))?;
    }
    let mut child: Option<Child> = None;
    match &o.target {
        Traced::All => {
            for d in &defs {
                guard.enable(&d.event)?;
            }
        }
        Traced::Pid(pid) => {
            let tids = threads(&o.proc_dir, *pid)?;
            guard.set("options/event-fork", "1")?;
            guard.set("set_event_pid", &tids)?;
            for d in &defs {
                guard.enable(&d.event)?;
            }
        }
        Traced::Command(argv) => {
            guard.set("options/event-fork", "1")?;
            guard.set("set_event_pid", "")?;
            // The command's own shell puts its pid in the filter, enables
            // the events (the last one after its own write, so that write
            // is not recorded) and becomes the command: only it and its
            // children are recorded, from their first instruction.
            for d in &defs {
                guard.enabled.push(d.event.clone());
            }
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!(
                    r#"h=$0; fail() {{ printf 'copygen record: cannot %s\n' "$*" >&2; exit 126; }}; echo $$ >"$h/set_event_pid" || fail "write $h/set_event_pid"; while [ "$1" != -- ]; do echo 1 >"$h/events/{GROUP}/$1/enable" || fail "enable {GROUP}/$1"; shift; done; shift; exec "$@""#
                ))
                .arg(&here);
            c.args(defs.iter().rev().map(|d| d.event.as_str()))
                .arg("--")
                .args(argv);
            child = Some(
                c.spawn()
                    .map_err(|e| anyhow!("cannot start sh to run the command: {e}"))?,
            );
        }
    }
    let pipe_path = here.join("trace_pipe");
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
        status: None,
    };
    let mut reader = PipeReader {
        pipe,
        origin,
        parser,
        pending: Vec::new(),
        scanned: 0,
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
        if let Traced::Pid(pid) = o.target {
            if !o.proc_dir.join(pid.to_string()).exists() {
                break "the process ended";
            }
        }
        if let Some(c) = child.as_mut() {
            if let Some(status) = c.try_wait()? {
                rec.status = Some(status);
                break "the command ended";
            }
        }
        reader.poll(100);
        if reader.read_some(&mut rec, o.calls)? == Some(0) {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // What the kernel wrote before the events were disabled is still in the
    // ring buffer: read it, so a signal or --seconds loses no call. The
    // read ends when the buffer is empty, at DRAIN_LIMIT, or at another
    // signal (the flag is cleared for it).
    let errors = guard.disable();
    if !errors.is_empty() {
        return Err(anyhow!("disabling the probes: {}", errors.join("; ")));
    }
    o.stop.store(false, Ordering::SeqCst);
    let until = Instant::now() + DRAIN_LIMIT;
    while rec.rows.len() < o.calls {
        if o.stop.load(Ordering::SeqCst) {
            rec.notes
                .push("a second signal ended the read of what the ring buffer held".into());
            break;
        }
        if Instant::now() >= until {
            rec.notes.push(format!(
                "{} was still not empty {} s after the events were disabled: the rest left unread",
                escape(&reader.origin, false),
                DRAIN_LIMIT.as_secs()
            ));
            break;
        }
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

/// The threads of process `pid`, blank-separated, for `set_event_pid`
/// (its `task` folder; only `pid` where that is unreadable).
fn threads(proc_dir: &Path, pid: u32) -> Result<String> {
    if pid == 0 || !proc_dir.join(pid.to_string()).is_dir() {
        return Err(refuse(format!("-p {pid}: no such process")));
    }
    let mut tids: Vec<u32> = std::fs::read_dir(proc_dir.join(pid.to_string()).join("task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if !tids.contains(&pid) {
        tids.push(pid);
    }
    tids.sort_unstable();
    Ok(tids
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" "))
}
