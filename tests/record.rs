//! `copygen record`'s probe table and trace reader: the probe definitions
//! per arch, lines in the formats tracefs prints, located errors for
//! anything else, `--from-trace` and `--summary` from the command line.

use std::process::Command;

use copygen::front::strategy::{Arch, Direction};
use copygen::kernel::copy_symbols::probes;
use copygen::tools::record::kallsyms::Kallsyms;
use copygen::tools::record::parse::{event, parse_text, Parser, TraceLine};
use copygen::tools::record::{definitions, event_direction, pick, to_csv, Row};
use copygen::tools::trace::Trace;

fn copygen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
}

fn lines(arch: Arch, probe: &str) -> Vec<String> {
    definitions(probes(arch), &pick(arch, probe).unwrap())
        .into_iter()
        .map(|d| d.line)
        .collect()
}

#[test]
fn probe_definitions_per_arch() {
    assert_eq!(
        lines(Arch::X86_64, "rep_movs_alternative"),
        ["p:copygen/copygen_any rep_movs_alternative to_off=%di:b12@0/64 from_off=%si:b12@0/64 n=%cx:u64 to_kernel=%di:b1@63/64 from_kernel=%si:b1@63/64 caller=+0(%sp):x64"]
    );
    assert_eq!(
        lines(Arch::X86_64, "_copy_user"),
        [
            "p:copygen/copygen_from _copy_from_user to_off=%di:b12@0/64 from_off=%si:b12@0/64 n=%dx:u64 caller=+0(%sp):x64",
            "p:copygen/copygen_to _copy_to_user to_off=%di:b12@0/64 from_off=%si:b12@0/64 n=%dx:u64 caller=+0(%sp):x64",
        ]
    );
    // The C-convention copygen routine takes n in rdx, the rep_movs one in rcx.
    assert!(lines(Arch::X86_64, "copygen_copy_user")[0].contains(" n=%dx:u64 "));
    assert!(lines(Arch::X86_64, "copygen_copy_user:rep_movs")[0].contains(" n=%cx:u64 "));
    assert_eq!(
        lines(Arch::Aarch64, "__arch_copy_from_user"),
        [
            "p:copygen/copygen_from __arch_copy_from_user to_off=%x0:b12@0/64 from_off=%x1:b12@0/64 n=%x2:u64 caller=%lr:x64",
            "p:copygen/copygen_to __arch_copy_to_user to_off=%x0:b12@0/64 from_off=%x1:b12@0/64 n=%x2:u64 caller=%lr:x64",
        ]
    );
    assert_eq!(
        lines(Arch::Armv6, "arm_copy_user")[1],
        "p:copygen/copygen_to arm_copy_to_user to_off=%r0:b12@0/32 from_off=%r1:b12@0/32 n=%r2:u32 caller=%lr:x32"
    );
    assert_eq!(
        lines(Arch::I386, "__copy_user_ll"),
        ["p:copygen/copygen_any __copy_user_ll to_off=%ax:b12@0/32 from_off=%dx:b12@0/32 n=%cx:u32 to_kernel=%ax:b2@30/32 from_kernel=%dx:b2@30/32 caller=+0(%sp):x32"]
    );
    let e = pick(Arch::Aarch64, "rep_movs_alternative")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not a copy routine copygen knows on aarch64")
            && e.contains("__arch_copy_to_user")
            && e.contains("NAME[,NAME...]:CONVENTION (c (AAPCS64"),
        "{e}"
    );
}

#[test]
fn routines_named_with_their_convention() {
    // A per-CPU kernel's variant routines: one event each, in the
    // convention's registers, the direction told by the pointers.
    assert_eq!(
        lines(Arch::X86_64, "a__erms_copy_user,a__zen_copy_user:rep_movs"),
        [
            "p:copygen/copygen_any a__erms_copy_user to_off=%di:b12@0/64 from_off=%si:b12@0/64 n=%cx:u64 to_kernel=%di:b1@63/64 from_kernel=%si:b1@63/64 caller=+0(%sp):x64",
            "p:copygen/copygen_any2 a__zen_copy_user to_off=%di:b12@0/64 from_off=%si:b12@0/64 n=%cx:u64 to_kernel=%di:b1@63/64 from_kernel=%si:b1@63/64 caller=+0(%sp):x64",
        ]
    );
    assert!(lines(Arch::X86_64, "my_copy:c")[0]
        .contains(" my_copy to_off=%di:b12@0/64 from_off=%si:b12@0/64 n=%dx:u64 "));
    assert!(lines(Arch::I386, "my_copy:c")[0].contains(" n=%cx:u32 to_kernel=%ax:b2@30/32 "));
    assert!(lines(Arch::Riscv64, "my_copy.part.0:c")[0].contains(" my_copy.part.0 to_off=%a0:"));
    for (arch, spec, why) in [
        (
            Arch::I386,
            "a:rep_movs",
            "`rep_movs` is not a calling convention of i386 routines: c",
        ),
        (
            Arch::X86_64,
            "a:",
            "no calling convention after the colon: c, rep_movs",
        ),
        (Arch::X86_64, "a,a:c", "`a` is named twice"),
        (Arch::X86_64, "a,,b:c", "a name is empty"),
        (Arch::X86_64, ":c", "a name is empty"),
        (Arch::X86_64, "1a:c", "`1a` is not a symbol name"),
        (Arch::X86_64, "a b:c", "`a b` is not a symbol name"),
        (Arch::X86_64, "a:c:c", "`c:c` is not a calling convention"),
    ] {
        let e = pick(arch, spec).unwrap_err().to_string();
        assert!(e.contains(why), "{spec}: {e}");
    }
    // Every event a probe defines reads back as its direction.
    for spec in ["a,b,c:c", "_copy_user", "copygen_copy_user"] {
        for d in definitions(probes(Arch::X86_64), &pick(Arch::X86_64, spec).unwrap()) {
            let (_, symbol) = d.line.split_once(' ').unwrap();
            let symbol = symbol.split(' ').next().unwrap();
            let want = match symbol {
                "_copy_from_user" => Some(Direction::FromUser),
                "_copy_to_user" => Some(Direction::ToUser),
                _ => None,
            };
            assert_eq!(event_direction(&d.event), Some(want), "{}", d.event);
        }
    }
    for other in [
        "copygen_any0",
        "copygen_any02",
        "copygen_anyx",
        "copygen_fromx",
        "other_any",
    ] {
        assert_eq!(event_direction(other), None, "{other}");
    }
}

const X86: &str = "              dd-93      [000] d....    12.345678: copygen_any: (rep_movs_alternative+0x0/0x70) to_off=16 from_off=0 n=4096 to_kernel=0 from_kernel=1 caller=0xffffffff81000150";

#[test]
fn trace_lines_in_real_formats() {
    let k = Kallsyms::parse(
        "map",
        "ffffffff81000100 t filemap_read\nffffffff81000200 T cp_new_stat\n",
    )
    .unwrap()
    .unwrap();
    let mut p = Parser::new("t.trace", None, Some(&k));
    assert_eq!(
        p.line(1, X86).unwrap(),
        TraceLine::Call(Row {
            dir: Direction::ToUser,
            n: 4096,
            dst_off: 16,
            src_off: 0,
            caller: Some("filemap_read".into()),
        })
    );
    // trace_pipe without the irq-flags column, a task name with a space, hex values.
    let l = "   kworker/u2:1 x-12 [001]  3.000001: copygen_any: (rep_movs_alternative+0x0/0x70) to_off=0x8 from_off=0xff8 n=0x18 to_kernel=1 from_kernel=0 caller=0xffffffff81000208";
    assert_eq!(
        p.line(2, l).unwrap(),
        TraceLine::Call(Row {
            dir: Direction::FromUser,
            n: 24,
            dst_off: 8,
            src_off: 4088,
            caller: Some("cp_new_stat".into()),
        })
    );
    // arm64's directional events.
    let a = "  cat-7  [000] .....  1.5: copygen_from: (__arch_copy_from_user+0x0/0x1e0) to_off=0 from_off=64 n=128 caller=0xffff800080001234";
    let TraceLine::Call(r) = p.line(3, a).unwrap() else {
        panic!()
    };
    assert_eq!(
        (r.dir, r.n, r.dst_off, r.src_off),
        (Direction::FromUser, 128, 0, 64)
    );
    // Whole pointers (a hand-written probe): page offsets kept, the arch's split decides.
    let mut p = Parser::new("t.trace", Some(Arch::X86_64), None);
    let w = "cat-123 [000] d.... 12.345: copygen_any: (rep_movs_alternative+0x0/0x70) to=0x7ffd12345678 from=0xffff888001234010 n=0x40";
    assert_eq!(
        p.line(1, w).unwrap(),
        TraceLine::Call(Row {
            dir: Direction::ToUser,
            n: 64,
            dst_off: 0x678,
            src_off: 0x010,
            caller: None
        })
    );
    // Both sides kernel: no user side.
    let kk = "cat-123 [000] d.... 12.345: copygen_any: (rep_movs_alternative+0x0/0x70) to_off=0 from_off=0 n=8 to_kernel=1 from_kernel=1";
    assert_eq!(p.line(2, kk).unwrap(), TraceLine::NoUserSide);
    // Headers, lost events, other groups' events.
    assert_eq!(p.line(3, "# tracer: nop").unwrap(), TraceLine::Skipped);
    assert_eq!(
        p.line(4, "CPU:0 [LOST 17 EVENTS]").unwrap(),
        TraceLine::Lost(17)
    );
    let other = "sh-1 [000] ..... 1.0: sched_switch: (foo+0x0/0x10) a=1";
    assert_eq!(p.line(5, other).unwrap(), TraceLine::Skipped);
    assert_eq!(event(X86).unwrap().symbol, "rep_movs_alternative");
    // As a 6.12 x86_64 guest printed it (verify/kernel-record, dd bs=4k).
    let real = "              dd-48      [000] d.Z..     3.176168: copygen_any: (rep_movs_alternative+0x0/0x90) to_off=3808 from_off=3312 n=32 to_kernel=1 from_kernel=0 caller=0xffffffff81180937";
    assert_eq!(
        p.line(6, real).unwrap(),
        TraceLine::Call(Row {
            dir: Direction::FromUser,
            n: 32,
            dst_off: 3808,
            src_off: 3312,
            caller: None
        })
    );
    // As a 6.12 i386 guest printed it: a copy to user space at 0xBFxxxxxx (the
    // stack; top bits 2).
    let i386 = "         timeout-34      [000] d.Z..     0.846936: copygen_any: (__copy_user_ll+0x0/0x36) to_off=3936 from_off=1764 n=20 to_kernel=3 from_kernel=2 caller=0xc111ba8c";
    let mut p = Parser::new("t.trace", Some(Arch::I386), None);
    assert_eq!(
        p.line(1, i386).unwrap(),
        TraceLine::Call(Row {
            dir: Direction::FromUser,
            n: 20,
            dst_off: 3936,
            src_off: 1764,
            caller: None
        })
    );
    // As a 6.12 armv6 guest printed it: arm_copy_to_user's address is also
    // __copy_to_user_std's, and tracefs names the probe by that.
    let arm = "              dd-54      [000] d....     4.608116: copygen_to: (__copy_to_user_std+0x0/0x358) to_off=3952 from_off=340 n=4 caller=0xc028e998";
    let mut p = Parser::new("t.trace", Some(Arch::Armv6), None);
    assert_eq!(
        p.line(1, arm).unwrap(),
        TraceLine::Call(Row {
            dir: Direction::ToUser,
            n: 4,
            dst_off: 3952,
            src_off: 340,
            caller: None
        })
    );
}

/// i386's two-way probe keeps the top two bits of each pointer: a kernel
/// address (0xC0000000 and up) has both set, and a user stack buffer
/// (0xBFxxxxxx, top bits `2`) is still the user's side.
#[test]
fn i386_top_bits_tell_user_from_kernel() {
    let line = |to_k: u64, from_k: u64| {
        format!("sh-50 [000] d.... 3.25: copygen_any: (__copy_user_ll+0x0/0x70) to_off=2352 from_off=16 n=64 to_kernel={to_k} from_kernel={from_k} caller=0xc10a1234")
    };
    // Named by the --script marker or --arch, or known from the symbol alone.
    for arch in [Some(Arch::I386), None] {
        let mut p = Parser::new("t.trace", arch, None);
        let row = |dir| {
            TraceLine::Call(Row {
                dir,
                n: 64,
                dst_off: 2352,
                src_off: 16,
                caller: None,
            })
        };
        assert_eq!(p.line(1, &line(2, 3)).unwrap(), row(Direction::ToUser));
        assert_eq!(p.line(2, &line(3, 1)).unwrap(), row(Direction::FromUser));
        assert_eq!(p.line(3, &line(0, 3)).unwrap(), row(Direction::ToUser));
        assert_eq!(p.line(4, &line(3, 3)).unwrap(), TraceLine::NoUserSide);
        assert_eq!(p.line(5, &line(1, 2)).unwrap(), TraceLine::NoUserSide);
        let e = format!("{:#}", p.line(6, &line(4, 3)).unwrap_err());
        assert!(
            e.starts_with("t.trace:6:93: error: field `to_kernel`: 4 is not the top 2 bit(s) of a pointer (0 to 3)"),
            "{e}"
        );
    }
    // copygen_copy_user is probed both ways on x86_64 and riscv64 (one bit) and
    // i386 (two): without an arch a flag is not read as either.
    let amb = "sh-50 [000] d.... 3.25: copygen_any: (copygen_copy_user+0x0/0x70) to_off=0 from_off=0 n=8 to_kernel=1 from_kernel=0";
    let mut p = Parser::new("t.trace", None, None);
    let e = format!("{:#}", p.line(1, amb).unwrap_err());
    assert!(
        e.starts_with(
            "t.trace:1:91: error: field `to_kernel`: the top bits of a pointer, and no arch"
        ),
        "{e}"
    );
    let mut p = Parser::new("t.trace", Some(Arch::X86_64), None);
    assert!(matches!(
        p.line(1, amb).unwrap(),
        TraceLine::Call(Row {
            dir: Direction::FromUser,
            ..
        })
    ));
}

/// The traces shipped under generator/workloads/ are workload traces a
/// bench can load, at least six per arch, each saying how it was recorded.
#[test]
fn shipped_workloads_load() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/workloads");
    for arch in ["x86_64", "i386", "armv6", "aarch64"] {
        let dir = root.join(arch);
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|e| e != "csv") {
                continue;
            }
            let t = Trace::load(&p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            assert!(
                !t.calls.is_empty() && t.calls.len() <= 20_000,
                "{}",
                p.display()
            );
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(
                text.contains("# recorded by verify/kernel-record: Linux 6.12"),
                "{}",
                p.display()
            );
            n += 1;
        }
        assert!(n >= 6, "{arch}: {n} traces");
    }
}

fn err(text: &str, arch: Option<Arch>) -> String {
    format!(
        "{:#}",
        parse_text("t.trace", text, arch, None, 100).unwrap_err()
    )
}

#[test]
fn garbage_gets_located_errors() {
    let head = "# tracer: nop\n";
    let cases = [
        ("hello world", "t.trace:2:1: error: not a trace event line"),
        (
            "cat-1 [000] ..... 1.5: copygen_any: (rep_movs_alternative+0x0/0x70) to_off=16 from_off=0 n=zz to_kernel=0 from_kernel=1",
            "t.trace:2:92: error: field `n`: `zz` is not a number",
        ),
        (
            "cat-1 [000] ..... 1.5: copygen_from: (__arch_copy_from_user+0x0/0x1e0) to_off=4096 from_off=0 n=1",
            "t.trace:2:72: error: field `to_off`: 4096 is not a page offset",
        ),
        (
            "cat-1 [000] ..... 1.5: copygen_from: (__arch_copy_from_user+0x0/0x1e0) to_off=0 from_off=0",
            "t.trace:2:91: error: copygen_from has no field `n`",
        ),
        (
            "cat-1 [000] ..... yesterday: copygen_from: (__arch_copy_from_user+0x0/0x1e0) n=1",
            "t.trace:2:19: error: `yesterday:` is not a timestamp",
        ),
        (
            "cat-1 [000] ..... 1.5: copygen_to: (__arch_copy_to_user+0x0/0x1e0) to_off=0 from_off=0 n=1 junk",
            "t.trace:2:92: error: `junk` is not a field",
        ),
        (
            "cat-1 [000] ..... 1.5: copygen_to: (__arch_copy_to_user+0x0/0x1e0) to_off=0 from_off=0 n=268435457",
            "t.trace:2:88: error: field `n`: 268435457 is larger than 268435456",
        ),
        (
            "cat-1 [000] ..... 1.5: copygen_any: (rep_movs_alternative+0x0/0x70) to=0x7ffd00000000 from=0xffff888000000000 n=1",
            "t.trace:2:69: error: whole pointers and no arch",
        ),
        (
            "cat-1 [000] ..... 1.5: copygen_any: (rep_movs_alternative+0x0/0x70) to_off=0 from_off=0 n=1",
            "t.trace:2:92: error: copygen_any has no field `to_kernel`",
        ),
    ];
    for (line, want) in cases {
        let got = err(&format!("{head}{line}\n"), None);
        assert!(got.starts_with(want), "{line}\n got: {got}\nwant: {want}");
    }
    // The marker line of --script names the arch; a contradicting --arch is refused.
    let marked = "# copygen-record arch=aarch64 symbol=__arch_copy_user rc=0 command: cat\n";
    let got = err(marked, Some(Arch::X86_64));
    assert!(
        got.starts_with(
            "t.trace:1:1: error: the trace was recorded on aarch64, --arch says x86_64"
        ),
        "{got}"
    );
}

#[test]
fn limit_keeps_the_first_calls_and_csv_reads_back() {
    let mut text =
        String::from("# copygen-record arch=x86_64 symbol=rep_movs_alternative rc=0 command: dd\n");
    for i in 0..5 {
        text.push_str(&format!(
            "dd-9 [000] ..... 1.{i}: copygen_any: (rep_movs_alternative+0x0/0x70) to_off={i} from_off=0 n={} to_kernel=0 from_kernel=1\n",
            512 * (i + 1)
        ));
    }
    let p = parse_text("t", &text, None, None, 3).unwrap();
    assert_eq!(p.arch, Some(Arch::X86_64));
    assert_eq!((p.rows.len(), p.dropped), (3, 2));
    assert_eq!(
        p.rows.iter().map(|r| r.n).collect::<Vec<_>>(),
        [512, 1024, 1536]
    );
    let csv = to_csv(&["a note".into()], &p.rows);
    let t = Trace::parse("t", "t.csv", &csv).unwrap();
    assert_eq!(t.calls.len(), 3);
    assert_eq!((t.calls[2].call.n, t.calls[2].call.dst_off), (1536, 2));
    assert!(csv.starts_with("# a note\ndirection,size,dst_offset,src_offset,caller\nto,512,0,0,\n"));
}

#[test]
fn from_trace_and_summary_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.trace");
    let map = dir.path().join("System.map");
    std::fs::write(&map, "ffffffff81000100 t filemap_read\n").unwrap();
    std::fs::write(&raw, format!("# copygen-record arch=x86_64 symbol=rep_movs_alternative rc=0 command: dd\n# tracer: nop\n{X86}\n{X86}\n")).unwrap();
    let csv = dir.path().join("out.csv");
    let o = copygen()
        .args(["record", "--from-trace"])
        .arg(&raw)
        .arg("--kallsyms")
        .arg(&map)
        .args(["--note", "dd: dd if=x of=y", "-o"])
        .arg(&csv)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        text.starts_with("# dd: dd if=x of=y\n# copygen record --from-trace raw.trace: 2 calls\n"),
        "{text}"
    );
    assert!(
        text.ends_with("to,4096,16,0,filemap_read\nto,4096,16,0,filemap_read\n"),
        "{text}"
    );
    let o = copygen()
        .args(["record", "--summary"])
        .arg(&csv)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("out: 2 calls (0 from user, 2 to user), 8192 bytes"),
        "{s}"
    );
    assert!(
        s.contains("| 1K-4K | 2 | 100.0% |") && s.contains("| 16..31 | 2 | 100.0% |"),
        "{s}"
    );
    assert!(s.contains("top callers: filemap_read (100.0%)"), "{s}");

    // Garbage: exit 2, a located error, nothing written.
    std::fs::write(&raw, format!("{X86}\nnot a trace line\n")).unwrap();
    let bad = dir.path().join("bad.csv");
    let o = copygen()
        .args(["record", "--from-trace"])
        .arg(&raw)
        .arg("-o")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("raw.trace:2:1: error: not a trace event line"),
        "{e}"
    );
    assert!(!bad.exists());
}

/// verify/kernel-record's fragments: kprobe events on every arch it records,
/// and what each guest's user space needs of the kernel.
#[test]
fn record_fragments_hold_what_the_guests_need() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("verify/kernel");
    let lines = |arch: &str| -> Vec<String> {
        let p = dir.join(format!("record-{arch}.config"));
        std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .lines()
            .map(String::from)
            .collect()
    };
    for arch in ["x86_64", "i386", "armv6", "aarch64"] {
        let l = lines(arch);
        for want in [
            "CONFIG_KPROBES=y",
            "CONFIG_KPROBE_EVENTS=y",
            "CONFIG_INET=y",
        ] {
            assert!(l.iter().any(|x| x == want), "record-{arch}.config: {want}");
        }
    }
    // Debian's i386 glibc (32-bit time_t) sleeps through the time32 nanosleep:
    // without it busybox's sleep and timeout return at once.
    assert!(lines("i386")
        .iter()
        .any(|x| x == "CONFIG_COMPAT_32BIT_TIME=y"));
    // armv6: the probed arm_copy_to_user is the assembly routine, and -O2 keeps
    // raw_copy_{to,from}_user inline (the callers are the functions that copy).
    let arm = lines("armv6");
    for want in [
        "# CONFIG_UACCESS_WITH_MEMCPY is not set",
        "CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE=y",
        "CONFIG_FTRACE=y",
        "CONFIG_NET=y",
    ] {
        assert!(arm.iter().any(|x| x == want), "record-armv6.config: {want}");
    }
}
