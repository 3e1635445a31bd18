//! `copygen record --script`: the probes of [`super::definitions`] as a
//! POSIX sh script (busybox sh will do) for a machine copygen does not run
//! on. It adds the probes, traces one command (and its children: the pid
//! filter follows forks), writes the `trace` text with a marker line naming
//! the arch, and removes the probes on every way out (a normal end, a
//! failed step, SIGINT, SIGTERM). Like the live recorder it works in a
//! private tracefs instance (`instances/copygen-PID`) where the kernel has
//! them, so the top-level buffer and settings are not touched; without
//! instances it changes only `set_event_pid` and `options/event-fork` of
//! the top level, and puts back what they held. Every text from outside
//! (paths, the command's arguments) is printed with `printf '%s'`, never
//! `echo`, which some shells read escapes in. `copygen record
//! --from-trace` reads what it wrote.

use std::fmt::Write as _;

use super::parse::SCRIPT_MARK;
use super::{definitions, GROUP};
use crate::front::strategy::Arch;
use crate::kernel::copy_symbols::{probes, CopyProbe};

/// The script for `probe` on `arch`.
pub fn script(arch: Arch, probe: &CopyProbe) -> String {
    let defs = definitions(probes(arch), probe);
    let symbols: Vec<&str> = defs.iter().map(|d| d.symbol.as_str()).collect();
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
# Environment: TRACEFS (default /sys/kernel/tracing), KALLSYMS (default /proc/kallsyms), BUFFER_KB (default 8192, per CPU,
# of the private instance; when it fills, later calls are dropped and the trace keeps the first ones).
set -u
T=${{TRACEFS:-/sys/kernel/tracing}}
G={GROUP}
EVENTS="{events}"
die() {{ printf 'record: %s\n' "$*" >&2; exit 2; }}
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
# Where the events are enabled and the trace is read: a private instance
# where the kernel has them, else the top level.
I=$T
inst=
saved=
cleanup() {{
	for e in $added; do echo 0 >"$I/events/$G/$e/enable" 2>/dev/null; done
	if [ -n "$saved" ]; then
		printf '%s' "$pids" >"$T/set_event_pid" 2>/dev/null
		printf '%s' "$fork" >"$T/options/event-fork" 2>/dev/null
		saved=
	fi
	if [ -n "$inst" ]; then
		# EBUSY while another program has one of its files open: once more.
		rmdir "$inst" 2>/dev/null || {{ sleep 1; rmdir "$inst"; }} ||
			printf 'record: could not remove the instance %s: rmdir it\n' "$inst" >&2
		inst=
	fi
	for e in $added; do
		printf '%s\n' "-:$G/$e" >>"$T/kprobe_events" || printf 'record: could not remove %s from %s\n' "$G/$e" "$T/kprobe_events" >&2
	done
	added=
}}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
if [ -d "$T/instances" ]; then
	I=$T/instances/$G-$$
	mkdir "$I" || die "cannot make the tracefs instance $I (run as root; or rmdir one left by a killed run)"
	inst=$I
else
	# No instances: the top level's pid filter and event-fork are changed,
	# and put back at the end; its buffer and tracing_on are left alone.
	[ "$(cat "$T/tracing_on" 2>/dev/null)" = 0 ] &&
		die "tracing is off ($T/tracing_on is 0) and this kernel has no instances: turn it on first"
	# (Read with a sentinel: $(...) would drop trailing newlines.)
	pids=$(cat "$T/set_event_pid" && echo x) || die "cannot read $T/set_event_pid (run as root)"
	fork=$(cat "$T/options/event-fork" && echo x) || die "cannot read $T/options/event-fork"
	pids=${{pids%x}} fork=${{fork%x}}
	saved=1
fi
add() {{
	printf '%s\n' "$2" >>"$T/kprobe_events" || die "the kernel refused the probe: $2"
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
        r#"if [ -n "$inst" ]; then
	echo 0 >"$I/tracing_on" || die "cannot write $I/tracing_on"
	printf '%s\n' "${{BUFFER_KB:-8192}}" >"$I/buffer_size_kb" || die "cannot set $I/buffer_size_kb"
	echo 0 >"$I/options/overwrite"
fi
echo 1 >"$I/options/event-fork" || die "cannot write $I/options/event-fork"
# The command's own shell sets the pid filter, enables the events (the last
# one after its own write, so that write is not recorded) and, in an
# instance, starts its tracing, then becomes the command: only it and its
# children are recorded, and not these writes.
sh -c 'I=$0 inst=$1; shift
fail() {{ printf "record: cannot %s\\n" "$*" >&2; exit 126; }}
echo $$ >"$I/set_event_pid" || fail "write $I/set_event_pid"
while [ "$1" != -- ]; do echo 1 >"$I/events/{GROUP}/$1/enable" || fail "enable {GROUP}/$1"; shift; done; shift
[ -z "$inst" ] || echo 1 >"$I/tracing_on" || fail "write $I/tracing_on"
exec "$@"' "$I" "$inst" {rev_events} -- "$@"
rc=$?
[ -n "$inst" ] && echo 0 >"$I/tracing_on"
for e in $EVENTS; do echo 0 >"$I/events/$G/$e/enable"; done
# How often the kernel hit the probes (every process's calls, while enabled): a trace
# with no event then tells a kernel that kept none from probes that were never hit.
hits=
if [ -r "$T/kprobe_profile" ]; then
	hits=$(awk -v ev=" $EVENTS " 'index(ev, " " $1 " ") {{ n += $2 }} END {{ printf " hits=%d", n }}' "$T/kprobe_profile")
fi
# The marker line: the command's words as data, one line whatever they hold.
mark() {{
	printf '%s' "{SCRIPT_MARK} arch={arch} symbol={name} rc=$rc$hits command:"
	for a in "$@"; do printf ' %s' "$a"; done | tr '\n\r' '  '
	printf '\n'
}}
if [ "$out" = - ]; then
	{{ mark "$@"; cat "$I/trace"; }}
else
	{{ mark "$@"; cat "$I/trace"; }} >"$out" || die "cannot write $out"
fi
cleanup
exit $rc
"#,
        rev_events = events.iter().rev().copied().collect::<Vec<_>>().join(" "),
        name = probe.name,
    );
    s
}
