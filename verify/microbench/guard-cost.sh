#!/usr/bin/env bash
# Builds and runs guard-cost.c (see its comment): what computing anything in front of
# `rep movsb` costs on this CPU, at eight code placements and from eight callers.
#   verify/microbench/guard-cost.sh        (x86_64, gcc; about 30 s)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bare='movq %rdx,%rcx; rep movsb; xorl %eax,%eax; ret'
alu='movq %rdx,%rcx; movl %edi,%eax; subl %esi,%eax; subl $1,%eax; testl $4080,%eax'
bodies=(
	"$bare"
	"$alu; je 1f; rep movsb; xorl %eax,%eax; ret; 1: ud2"
	"$alu; rep movsb; xorl %eax,%eax; ret"
	"movq %rdx,%rcx; movl \$1,%eax; testl %eax,%eax; je 1f; rep movsb; xorl %eax,%eax; ret; 1: ud2"
	"movq %rdx,%rcx; nop; nop; nop; nop; rep movsb; xorl %eax,%eax; ret"
)
# Eight fixed, spread placements inside a page (16-byte granules).
places=(1744 3888 208 2480 1392 3024 592 3664)
{
	echo '.text'
	for k in "${!bodies[@]}"; do
		for p in "${!places[@]}"; do
			printf '.p2align 12\n.skip %d, 0xcc\nr%d_%d: %s\n' "${places[$p]}" "$k" "$p" "${bodies[$k]}"
		done
	done
	for c in 0 1 2 3 4 5 6 7; do
		printf '.p2align 6\nloop%d: push %%rbx; push %%r12; push %%r13; push %%r14; push %%r15\n' "$c"
		printf 'mov %%rdi,%%rbx; mov %%rsi,%%r12; mov %%rdx,%%r13; mov %%rcx,%%r14; mov %%r8,%%r15\n2:\n'
		for ((i = 0; i < c; i++)); do echo nop; done
		printf 'mov %%rbx,%%rdi; mov %%r12,%%rsi; mov %%r13,%%rdx; call *%%r15; sub $1,%%r14; jnz 2b\n'
		printf 'pop %%r15; pop %%r14; pop %%r13; pop %%r12; pop %%rbx; ret\n'
	done
	echo '.section .data.rel.ro,"aw"'
	echo '.globl routines, loops'
	echo 'routines:'
	for k in "${!bodies[@]}"; do for p in "${!places[@]}"; do echo ".quad r${k}_$p"; done; done
	echo 'loops:'
	for c in 0 1 2 3 4 5 6 7; do echo ".quad loop$c"; done
	echo '.section .note.GNU-stack,"",@progbits'
} >"$tmp/guard-cost.S"
gcc -O2 -o "$tmp/guard-cost" "$here/guard-cost.c" "$tmp/guard-cost.S"
grep -m1 'model name' /proc/cpuinfo
"$tmp/guard-cost"
