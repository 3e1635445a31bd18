//! The sandbox `copygen verify` runs the fault-injection harness in:
//! code that makes system calls, spins or exits is stopped and reported,
//! and nothing it tries happens outside.

use std::time::Duration;

use copygen::checks::faultinject::{run_asm_with, EntryPoint};
use copygen::checks::sandbox::Limits;
use copygen::front::strategy::{Arch, Direction};

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(2),
        ..Limits::default()
    }
}

fn entry(symbol: &str) -> EntryPoint {
    EntryPoint {
        symbol: symbol.to_string(),
        direction: Direction::FromUser,
        fixed: None,
        zero_tail: false,
        exact: false,
    }
}

/// `execve("/bin/sh", 0, 0)` straight from the routine, then a marker file
/// the test looks for: it must never be made.
fn execve_x86_64(marker: &str) -> String {
    format!(
        r#"	.text
	.globl	evil_from_user
	.type	evil_from_user, @function
evil_from_user:
	leaq	argv(%rip), %rsi
	leaq	sh(%rip), %rdi
	movq	%rdi, (%rsi)
	leaq	dashc(%rip), %rax
	movq	%rax, 8(%rsi)
	leaq	cmd(%rip), %rax
	movq	%rax, 16(%rsi)
	xorl	%edx, %edx
	movl	$59, %eax
	syscall
	xorl	%eax, %eax
	ret
	.size	evil_from_user, . - evil_from_user
	.data
argv:	.quad 0, 0, 0, 0
sh:	.asciz "/bin/sh"
dashc:	.asciz "-c"
cmd:	.asciz "touch {marker}"
	.section .note.GNU-stack, "", @progbits
"#
    )
}

#[test]
fn execve_from_the_routine_is_killed_by_seccomp() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let asm = execve_x86_64(&marker.display().to_string());
    let err = run_asm_with(Arch::X86_64, &asm, &[entry("evil_from_user")], &limits())
        .expect_err("the harness must not report a result");
    let msg = format!("{err:#}");
    assert!(msg.contains("killed by seccomp: system call 59"), "{msg}");
    assert!(msg.contains("evil_from_user"), "{msg}");
    assert!(!marker.exists(), "the shell ran");
}

#[test]
fn a_routine_that_spins_times_out() {
    let asm = "\t.text\n\t.globl\tspin_from_user\n\t.type\tspin_from_user, @function\nspin_from_user:\n1:\tjmp\t1b\n\t.size\tspin_from_user, . - spin_from_user\n\t.section .note.GNU-stack, \"\", @progbits\n";
    let err = run_asm_with(Arch::X86_64, asm, &[entry("spin_from_user")], &limits())
        .expect_err("a spinning routine has no result");
    let msg = format!("{err:#}");
    assert!(msg.contains("timed out after 2 s"), "{msg}");
    assert!(msg.contains("in spin_from_user"), "{msg}");
}

#[test]
fn a_routine_that_exits_is_reported_with_its_status() {
    let asm = "\t.text\n\t.globl\tquit_from_user\n\t.type\tquit_from_user, @function\nquit_from_user:\n\tmovl\t$7, %edi\n\tcall\texit@PLT\n\t.size\tquit_from_user, . - quit_from_user\n\t.section .note.GNU-stack, \"\", @progbits\n";
    let err = run_asm_with(Arch::X86_64, asm, &[entry("quit_from_user")], &limits())
        .expect_err("an exiting routine has no result");
    let msg = format!("{err:#}");
    assert!(msg.contains("exited with status 7"), "{msg}");
}

/// Code that runs before the harness's `main` (a constructor) is under the
/// sandbox's own filter: its `execve` never happens.
#[test]
fn a_constructor_cannot_exec_either() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let asm = execve_x86_64(&marker.display().to_string())
        + "\t.section .init_array, \"aw\"\n\t.quad\tevil_from_user\n";
    let err = run_asm_with(Arch::X86_64, &asm, &[entry("evil_from_user")], &limits())
        .expect_err("the harness must not report a result");
    let msg = format!("{err:#}");
    assert!(msg.contains("killed by seccomp"), "{msg}");
    assert!(!marker.exists(), "the shell ran");
}

/// AArch64 under qemu-user: the guest cannot install a filter, the one
/// around qemu stops the exec.
#[test]
fn execve_under_qemu_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let asm = format!(
        r#"	.text
	.globl	evil_from_user
	.type	evil_from_user, %function
evil_from_user:
	adr	x0, sh
	adr	x1, argv
	str	x0, [x1]
	adr	x2, dashc
	str	x2, [x1, #8]
	adr	x2, cmd
	str	x2, [x1, #16]
	mov	x2, #0
	mov	x8, #221
	svc	#0
	mov	x0, #0
	ret
	.size	evil_from_user, . - evil_from_user
	.data
	.balign 8
argv:	.quad 0, 0, 0, 0
sh:	.asciz "/bin/sh"
dashc:	.asciz "-c"
cmd:	.asciz "touch {}"
	.section .note.GNU-stack, "", %progbits
"#,
        marker.display()
    );
    let err = run_asm_with(Arch::Aarch64, &asm, &[entry("evil_from_user")], &limits())
        .expect_err("the harness must not report a result");
    let msg = format!("{err:#}");
    assert!(msg.contains("killed by seccomp"), "{msg}");
    assert!(!marker.exists(), "the shell ran");
}

/// With too little address space the harness cannot even start: reported
/// as the memory limit, not as a crash.
#[test]
fn the_memory_limit_is_reported() {
    let asm = "\t.text\n\t.globl\tnop_from_user\n\t.type\tnop_from_user, @function\nnop_from_user:\n\txorl\t%eax, %eax\n\tret\n\t.size\tnop_from_user, . - nop_from_user\n\t.section .note.GNU-stack, \"\", @progbits\n";
    let tight = Limits {
        memory: 1 << 20,
        ..limits()
    };
    let err = run_asm_with(Arch::X86_64, asm, &[entry("nop_from_user")], &tight)
        .expect_err("1 MiB is not enough to start");
    let msg = format!("{err:#}");
    assert!(msg.contains("exceeded its memory limit (1 MiB)"), "{msg}");
}
