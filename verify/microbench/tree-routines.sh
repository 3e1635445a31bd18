#!/usr/bin/env bash
# Times copygen's emitted standalone routines against the kernel trees' own x86_64 copy
# routines, without copygen: arch/x86/lib/copy_user_64.o as kbuild builds it from Debian's
# 6.1 and 6.12 trees (defconfig, verify/kernel/lib.sh's build folders), linked as it is,
# and the routines of emitted/x86_64/standalone/*.S, in one C program (tree-routines.c,
# whose comment gives the method). The objects' alternatives are not applied, so the stock
# routines run the code of a CPU without ERMS or FSRM, whatever this CPU is:
#   6.12     rep_movs_alternative: a byte loop below 8, words below 64, then one word,
#            the destination aligned to 8, `rep movsq` and a byte tail (.Llarge_movsq)
#   6.12-fsrm  the inline `rep movsb` of 6.12's site on an FSRM CPU (no routine)
#   6.1      copy_user_generic_string (REP_GOOD): `rep movsq` + `rep movsb`
#   6.1-erms copy_user_enhanced_fast_string as a CPU without FSRM runs it: below 64 bytes
#            copy_user_short_string, else `rep movsb`
#   6.1-unrolled copy_user_generic_unrolled (neither REP_GOOD nor ERMS)
# Their returns reach `ret` through one `jmp __x86_return_thunk` (a CPU that needs no
# return thunk has them rewritten to `ret` at boot), the one difference from the kernel.
#
#   verify/microbench/tree-routines.sh [--stock LIST] [--rounds N] [--sizes LIST]
#       [--alias-offsets LIST] [--distribution NAME|FILE]... [--file FILE.S]... [--check]
#       [ROUTINE...]
# ROUTINE: a global symbol of emitted/x86_64/standalone/*.S or of a --file (a standalone
# x86_64 file `copygen emit` wrote, e.g. of a strategy under study; e.g.
# guarded_movsb__zen_movsq_from_user); --stock: the stock subjects, the first the baseline
# (default 6.12,6.1); --sizes (default 8,64,144,512,4096) at each --alias-offsets (default
# 0); --distribution: a name in generator/distributions/ or a CSV file; --check: only
# check that every subject copies correctly (no timing). Rows with neither flag: the sizes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=verify/kernel/lib.sh
. "$here/../kernel/lib.sh"

stock=6.12,6.1 rounds=11 sizes=8,64,144,512,4096 offsets=0 check=0
distributions=() routines=() sources=("$kernel_root"/emitted/x86_64/standalone/*.S)
while (($#)); do
	case $1 in
	--stock) stock=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--alias-offsets) offsets=$2; shift 2 ;;
	--distribution)
		f=$2
		[[ -f $f ]] || f=$kernel_root/generator/distributions/$2.csv
		[[ -f $f ]] || kernel_die "--distribution: no file $2, no $f"
		distributions+=("$f"); shift 2 ;;
	--file)
		[[ -f $2 ]] || kernel_die "--file: no file $2"
		sources=("$2" "${sources[@]}"); shift 2 ;;
	--check) check=1; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) kernel_die "unknown option $1 (--help)" ;;
	*) routines+=("$1"); shift ;;
	esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The trees' objects, built (once) by kbuild.
for v in 6.1 6.12; do kernel_need_build_tools "$v"; done
obj61=$(kernel_build_objects 6.1 x86_64 arch/x86/lib/copy_user_64.o)/arch/x86/lib/copy_user_64.o
obj612=$(kernel_build_objects 6.12 x86_64 arch/x86/lib/copy_user_64.o)/arch/x86/lib/copy_user_64.o

# name -> (label, stub body). A stub reaches its routine as the kernel's site does.
declare -A label=(
	[6.12]="6.12 rep_movs_alternative" [6.12-fsrm]="6.12 inline rep movsb"
	[6.1]="6.1 generic_string" [6.1-erms]="6.1 enhanced_fast_string" [6.1-unrolled]="6.1 generic_unrolled"
)
declare -A body=(
	[6.12]='movq %rdx,%rcx; call rep_movs_alternative; movq %rcx,%rax; ret'
	[6.12-fsrm]='movq %rdx,%rcx; rep movsb; movq %rcx,%rax; ret'
	[6.1]='call copy_user_generic_string; ret'
	[6.1-erms]='call copy_user_enhanced_fast_string; ret'
	[6.1-unrolled]='call copy_user_generic_unrolled; ret'
)
names=() labels=() bodies=()
IFS=, read -ra stocks <<<"$stock"
for s in "${stocks[@]}"; do
	[[ -n ${body[$s]:-} ]] || kernel_die "--stock: 6.12, 6.12-fsrm, 6.1, 6.1-erms, 6.1-unrolled, not '$s'"
	names+=("s_${s//[.-]/_}") labels+=("${label[$s]}") bodies+=("${body[$s]}")
done
files=()
for r in "${routines[@]}"; do
	f=$(grep -lE "^[[:space:]]*\.globl[[:space:]]+$r\$" "${sources[@]}" | head -1) ||
		kernel_die "no emitted/x86_64/standalone/*.S or --file defines $r"
	[[ " ${files[*]} " == *" $f "* ]] || files+=("$f")
	names+=("r_$r") labels+=("$r") bodies+=("call $r; ret")
done

{
	echo '.text'
	echo '.globl __x86_return_thunk'
	echo '__x86_return_thunk: ret'
	for i in "${!names[@]}"; do printf '.p2align 6\n%s: %s\n' "${names[$i]}" "${bodies[$i]}"; done
	echo '.section .rodata'
	for i in "${!names[@]}"; do printf 'name%d: .asciz "%s"\n' "$i" "${labels[$i]}"; done
	echo '.section .data.rel.ro,"aw"'
	echo '.p2align 3'
	echo '.globl subjects, subject_count'
	echo 'subject_count: .quad' "${#names[@]}"
	echo 'subjects:'
	for i in "${!names[@]}"; do printf '.quad name%d, %s\n' "$i" "${names[$i]}"; done
	echo '.section .note.GNU-stack,"",@progbits'
} >"$tmp/tree-routines.S"
gcc -O2 -no-pie -o "$tmp/tree-routines" "$here/tree-routines.c" "$tmp/tree-routines.S" "${files[@]}" \
	"$obj61" "$obj612" -Wl,--no-warn-rwx-segments 2>"$tmp/ld.log" || { cat "$tmp/ld.log" >&2; exit 1; }

if ((check)); then
	"$tmp/tree-routines" check
	exit
fi
rows=()
IFS=, read -ra size_list <<<"$sizes"
IFS=, read -ra offset_list <<<"$offsets"
if ((${#distributions[@]} == 0)) || [[ $sizes != 8,64,144,512,4096 || $offsets != 0 ]]; then
	for n in "${size_list[@]}"; do for d in "${offset_list[@]}"; do rows+=("$n@$d"); done; done
fi
rows+=("${distributions[@]}")
grep -m1 'model name' /proc/cpuinfo
awk '/^cpu family/ { f = $4 } $1 == "model" && $2 == ":" { m = $3 } /^flags/ { print "family " sprintf("0x%x", f) " model " sprintf("0x%x", m) "; " (/ erms/ ? "ERMS" : "no ERMS") ", " (/ fsrm/ ? "FSRM" : "no FSRM"); exit }' /proc/cpuinfo
"$tmp/tree-routines" time "$rounds" "${rows[@]}"
