//! `copygen record --script`: the probes of [`super::definitions`] as a
//! POSIX sh script (busybox sh will do) for a machine copygen does not run
//! on. It adds the probes, traces one command (and its children: the pid
//! filter follows forks), writes the `trace` text with a marker line naming
//! the arch, and removes the probes on every way out (a normal end, a
//! failed step, SIGINT, SIGTERM). `copygen record --from-trace` reads what
//! it wrote.

use std::fmt::Write as _;

use super::parse::SCRIPT_MARK;
use super::{definitions, GROUP};
use crate::arch::kernel_copy_symbols::{probes, CopyProbe};
use crate::front::strategy::Arch;

/// The script for `probe` on `arch`.
pub fn script(arch: Arch, probe: &CopyProbe) -> String {
    let defs = definitions(probes(arch), probe);
    let symbols: Vec<&str> = defs.iter().map(|d| d.symbol).collect();
    let events: Vec<&str> = defs.iter().map(|d| d.event.as_str()).collect();
    let mut s = String::new();
    let _ = write!(
        s,
        r#"#!/bin/sh
# Written by `copygen record --script --arch {arch} --symbol {name}`: records the
# kernel's calls to {syms} through tracefs kprobe events
# (group `{GROUP}`) while COMMAND runs, then writes the trace to OUT (`-`: stdout).
#   sh record.sh OUT COMMAND [ARG...]
# Convert OUT on any machine copygen runs on:
#   copygen record --from-trace OUT [--kallsyms System.map] -o trace.csv
# Environment: TRACEFS (default /sys/kernel/tracing), KALLSYMS (default /proc/kallsyms), BUFFER_KB (default 8192, per CPU;
# when it fills, later calls are dropped and the trace keeps the first ones).
set -u
T=${{TRACEFS:-/sys/kernel/tracing}}
G={GROUP}
EVENTS="{events}"
die() {{ echo "record: $*" >&2; exit 2; }}
[ $# -ge 2 ] || die "usage: $0 OUT COMMAND [ARG...]"
out=$1
shift
if [ ! -e "$T/kprobe_events" ]; then
	if [ -e "$T/trace" ]; then
		die "$T has no kprobe_events: the kernel lacks CONFIG_KPROBE_EVENTS (rebuild it with CONFIG_KPROBES, CONFIG_KPROBE_EVENTS)"
	fi
	die "tracefs is not mounted at $T: mount -t tracefs nodev $T (or set TRACEFS)"
fi
K=${{KALLSYMS:-/proc/kallsyms}}
if [ -r "$K" ]; then
	for s in {syms}; do
		grep -q " $s\$" "$K" ||
			die "$s is not in $K: this kernel does not call it (inlined, or another kernel version); pick another --symbol"
	done
fi
if grep -q "^[a-z]:$G/" "$T/kprobe_events"; then
	die "$T/kprobe_events already holds probes of group $G (another recording, or one killed with SIGKILL): remove them with: echo '-:$G/NAME' >> $T/kprobe_events"
fi
added=
cleanup() {{
	for e in $added; do echo 0 >"$T/events/$G/$e/enable" 2>/dev/null; done
	for e in $added; do
		echo "-:$G/$e" >>"$T/kprobe_events" || echo "record: could not remove $G/$e from $T/kprobe_events" >&2
	done
	added=
	echo >"$T/set_event_pid" 2>/dev/null
	echo 1 >"$T/tracing_on" 2>/dev/null
}}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
add() {{
	echo "$2" >>"$T/kprobe_events" || die "the kernel refused the probe: $2"
	added="$added $1"
}}
"#,
        name = probe.name,
        syms = symbols.join(" "),
        events = events.join(" "),
    );
    for d in &defs {
        let _ = writeln!(s, "add {} '{}'", d.event, d.line);
    }
    let _ = write!(
        s,
        r#"echo 0 >"$T/tracing_on" || die "cannot write $T/tracing_on (run as root)"
echo "${{BUFFER_KB:-8192}}" >"$T/buffer_size_kb" || die "cannot set $T/buffer_size_kb"
echo 0 >"$T/options/overwrite"
echo 1 >"$T/options/event-fork"
echo >"$T/trace"
for e in $EVENTS; do echo 1 >"$T/events/$G/$e/enable" || die "cannot enable $G/$e"; done
# The command's own shell sets the pid filter and starts tracing, then becomes the
# command: only it and its children are recorded, and not these writes.
sh -c 'echo $$ >"$0/set_event_pid" && echo 1 >"$0/tracing_on" && exec "$@"' "$T" "$@"
rc=$?
echo 0 >"$T/tracing_on"
for e in $EVENTS; do echo 0 >"$T/events/$G/$e/enable"; done
# How often the kernel hit the probes (every process's calls, while enabled): a trace
# with no event then tells a kernel that kept none from probes that were never hit.
hits=
if [ -r "$T/kprobe_profile" ]; then
	hits=$(awk -v ev=" $EVENTS " 'index(ev, " " $1 " ") {{ n += $2 }} END {{ printf " hits=%d", n }}' "$T/kprobe_profile")
fi
if [ "$out" = - ]; then
	{{ echo "{SCRIPT_MARK} arch={arch} symbol={name} rc=$rc$hits command: $*"; cat "$T/trace"; }}
else
	{{ echo "{SCRIPT_MARK} arch={arch} symbol={name} rc=$rc$hits command: $*"; cat "$T/trace"; }} >"$out" || die "cannot write $out"
fi
cleanup
exit $rc
"#,
        name = probe.name,
    );
    s
}
