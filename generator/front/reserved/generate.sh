#!/bin/sh
# Regenerate the lists of names a generated linux-flavour `.S` cannot use as
# a symbol, one list per architecture (`<arch>.txt` here): every macro the C
# preprocessor holds once the file's `#include`s are read (the kernel's own,
# from the 6.1 and 6.12 trees, as kbuild preprocesses a `.S`: -D__KERNEL__
# -D__ASSEMBLY__, no -std, so gcc's `linux`, `unix` and `i386` are defined),
# gcc's predefined macros for the target, and the names the templates
# define themselves. A symbol spelt as one of these comes out of cpp as
# something else.
#
#   generator/front/reserved/generate.sh /usr/src/linux-source-6.1.tar.xz \
#       /usr/src/linux-source-6.12.tar.xz
#
# Needs gcc, arm-linux-gnueabi-gcc, aarch64-linux-gnu-gcc and
# riscv64-linux-gnu-gcc. Each tree is
# preprocessed twice, with no options set and with every `CONFIG_*` a
# Debian amd64 config sets (/usr/src/linux-config-*), so macros defined
# only under an option are listed too.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each argument: a source tarball, or a tree already unpacked.
for tree in "$@"; do
	v=$(basename "$tree" .tar.xz | sed 's/^linux-source-//')
	if [ -d "$tree" ]; then
		ln -s "$(cd "$tree" && pwd)" "$work/$v"
	else
		mkdir -p "$work/$v"
		# (`*` crosses `/`: the first pattern takes every include folder.)
		tar -xJf "$tree" -C "$work/$v" --strip-components=1 --wildcards \
			"*/include/*" "*/arch/arm64/tools/*"
	fi
done

# The headers each template includes (templates/<arch>-linux.S.tera).
x86='#include <linux/linkage.h>
#include <linux/version.h>
#include <linux/export.h>
#include <asm/export.h>
#include <asm/alternative.h>
#include <asm/cpufeatures.h>
#include <asm/asm.h>
#include <asm/smap.h>'
arm='#include <linux/linkage.h>
#include <asm/assembler.h>'
arm64='#include <linux/linkage.h>
#include <asm/asm-uaccess.h>
#include <asm/assembler.h>'

riscv='#include <linux/linkage.h>
#include <linux/version.h>
#include <linux/export.h>
#include <asm/export.h>
#include <asm/asm.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>'
# The names the templates #define.
templates='COPYGEN_EXTABLE'

configs() { # version -> config files (a blank one first)
	: >"$work/none.config"
	echo "$work/none.config"
	for c in /usr/src/linux-config-"$1"/config.amd64_none_amd64.xz; do
		[ -f "$c" ] && { xz -dc "$c" >"$work/$1.config"; echo "$work/$1.config"; }
	done
	return 0
}

autoconf() { # .config -> autoconf.h; $2: 32 for a 32-bit x86 build
	sed -n 's/^CONFIG_\([A-Za-z0-9_]*\)=y$/#define CONFIG_\1 1/p
		s/^CONFIG_\([A-Za-z0-9_]*\)=m$/#define CONFIG_\1_MODULE 1/p
		s/^CONFIG_\([A-Za-z0-9_]*\)=\(.*\)$/#define CONFIG_\1 \2/p' "$1" |
		grep -v '_MODULE 1$\| y$\| m$' |
		if [ "$2" = 32 ]; then sed 's/CONFIG_X86_64 1/CONFIG_X86_32 1/;/CONFIG_64BIT/d'; else cat; fi
}

scan() { # arch srcarch cc flags includes
	arch=$1 src=$2 cc=$3 flags=$4 includes=$5
	out="$work/$arch.names"
	: >"$out"
	for tree in "$work"/*/; do
		[ -d "$tree/arch/$src" ] || continue
		v=$(basename "$tree")
		# kbuild's wrappers for asm-generic headers the arch does not have.
		gen="$work/gen-$v-$src"
		mkdir -p "$gen/asm" "$gen/generated/uapi/linux"
		for h in "$tree"/include/asm-generic/*.h; do
			b=$(basename "$h")
			[ -e "$tree/arch/$src/include/asm/$b" ] ||
				echo "#include <asm-generic/$b>" >"$gen/asm/$b"
		done
		for h in "$tree"/include/uapi/asm-generic/*.h; do
			b=$(basename "$h")
			[ -e "$tree/arch/$src/include/uapi/asm/$b" ] ||
				[ -e "$gen/asm/$b" ] ||
				echo "#include <asm-generic/$b>" >"$gen/asm/$b"
		done
		# arm64's generated capability and system-register names.
		if [ "$src" = arm64 ]; then
			t="$tree/arch/arm64/tools"
			caps=cpucaps.h # 6.1's; 6.12's <asm/cpucaps.h> includes cpucap-defs.h
			[ -e "$tree/arch/arm64/include/asm/cpucaps.h" ] && caps=cpucap-defs.h
			awk -f "$t/gen-cpucaps.awk" "$t/cpucaps" >"$gen/asm/$caps"
			awk -f "$t/gen-sysreg.awk" "$t/sysreg" >"$gen/asm/sysreg-defs.h"
		fi
		# Built from the configured tree: not known here.
		: >"$gen/generated/asm-offsets.h"
		printf '#define LINUX_VERSION_CODE 0\n#define KERNEL_VERSION(a,b,c) (((a) << 16) + ((b) << 8) + (c))\n' \
			>"$gen/generated/uapi/linux/version.h"
		for config in $(configs "$v"); do
			bits=64
			case "$flags" in *-m32*) bits=32 ;; esac
			case "$src" in x86) autoconf "$config" $bits ;; *) : ;; esac \
				>"$gen/generated/autoconf.h"
			# The headers this tree has (<asm/export.h> is 6.1's only).
			printf '%s\n' "$includes" | while read -r line; do
				h=$(echo "$line" | sed 's/.*<\(.*\)>.*/\1/')
				for d in "$tree/arch/$src/include" "$gen" "$tree/include"; do
					[ -e "$d/$h" ] && { echo "$line"; break; }
				done
			done >"$work/in.S"
			# shellcheck disable=SC2086
			$cc $flags -E -dM -nostdinc -D__KERNEL__ -D__ASSEMBLY__ \
				-I"$tree/arch/$src/include" -I"$gen" \
				-I"$tree/arch/$src/include/uapi" -I"$tree/include" \
				-I"$tree/include/uapi" -I"$gen/generated/uapi" \
				-include "$tree/include/linux/kconfig.h" \
				"$work/in.S" 2>"$work/err" >"$work/defs" || {
				cat "$work/err" >&2
				exit 1
			}
			sed -n 's/^#define \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' "$work/defs" >>"$out"
		done
	done
	# gcc's predefined macros as kbuild runs it on a .S (no -std).
	# shellcheck disable=SC2086
	$cc $flags -E -dM -x assembler-with-cpp /dev/null |
		sed -n 's/^#define \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' >>"$out"
	printf '%s\n' $templates >>"$out"
	{
		echo "# Names a linux-flavour $arch .S cannot use as a symbol: macros of the"
		echo "# kernel headers its template includes (6.1 and 6.12), gcc's predefined"
		echo "# macros and the template's own. Generated by generate.sh; do not edit."
		grep -v '^CONFIG_' "$out" | LC_ALL=C sort -u
	} >"$here/$arch.txt"
}

scan x86_64 x86 gcc "-m64" "$x86"
scan i386 x86 gcc "-m32" "$x86"
scan armv6 arm arm-linux-gnueabi-gcc "-march=armv6 -marm" "$arm"
scan aarch64 arm64 aarch64-linux-gnu-gcc "" "$arm64"
scan riscv64 riscv riscv64-linux-gnu-gcc "" "$riscv"
