# shellcheck shell=bash disable=SC2034 # (variables used by the scripts that source this)
# Shared by verify/kernel-tree, verify/kernel-boot and verify/kernel-ci (sourced, bash).
# Each kernel version's Debian tree is unpacked once into $kernel_cache/linux-<version>;
# every build is out of tree (O=). What differs per arch and per version is in the tables
# below: adding an arch or a version is adding a row.

kernel_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# COPYGEN_KERNEL_CACHE moves the cache (trees, build folders) elsewhere, e.g. a CI cache.
kernel_cache=${COPYGEN_KERNEL_CACHE:-$kernel_root/verify/.cache}
# The machine is shared: kernel builds run niced on two jobs.
kmake=(nice -n 10 make -j2)

# ---- versions --------------------------------------------------------------------------
kernel_versions=(6.1 6.12)
kernel_tarball() { echo "/usr/src/linux-source-$1.tar.xz"; }
kernel_src() { echo "$kernel_cache/linux-$1"; }

# ---- arches ----------------------------------------------------------------------------
kernel_arches=(x86_64 i386 armv6 aarch64 riscv64)
# make variables selecting the arch
declare -A kernel_make_args=(
	[x86_64]="ARCH=x86_64"
	[i386]="ARCH=i386"
	[armv6]="ARCH=arm CROSS_COMPILE=arm-linux-gnueabi-"
	[aarch64]="ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-"
	[riscv64]="ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu-"
)
# binutils prefix
declare -A kernel_cross=([x86_64]="" [i386]="" [armv6]="arm-linux-gnueabi-" [aarch64]="aarch64-linux-gnu-" [riscv64]="riscv64-linux-gnu-")
# kernel-tree: the configuration each file is built in ("TARGET -OPTION..." = a make
# target, then options switched off)
declare -A kernel_tree_config=(
	[x86_64]="defconfig"
	[i386]="defconfig"
	[armv6]="bcm2835_defconfig -ARCH_MULTI_V7"
	[aarch64]="defconfig"
	[riscv64]="defconfig"
)
# kernel-boot: the base configuration the fragments are merged over
# (verify/kernel/boot-<arch>.config, boot-<arch>-<version>.config, boot-<version>.config)
declare -A kernel_boot_base=([x86_64]=tinyconfig [i386]=tinyconfig [armv6]=bcm2835_defconfig [aarch64]=tinyconfig [riscv64]=tinyconfig)
declare -A kernel_boot_targets=([x86_64]="bzImage modules" [i386]="bzImage modules" [armv6]="zImage modules" [aarch64]="Image modules" [riscv64]="Image modules")
declare -A kernel_boot_image=([x86_64]=arch/x86/boot/bzImage [i386]=arch/x86/boot/bzImage [armv6]=arch/arm/boot/zImage [aarch64]=arch/arm64/boot/Image [riscv64]=arch/riscv/boot/Image)
# the device tree (make target per version, relative to arch/arm/boot/dts)
declare -A kernel_boot_dtb=([armv6 - 6.1]=bcm2835-rpi-zero.dtb [armv6 - 6.12]=broadcom/bcm2835-rpi-zero.dtb)
# qemu, TCG only. x86: `-cpu max` has SMAP (a missing STAC oopses); fsrm=off so that 6.12
# really calls rep_movs_alternative (qemu 7.2's TCG lacks FSRM anyway).
# aarch64: virt's `-cpu max` has PAN (a kernel-side ldr/str of user memory faults; the
# unprivileged ldtr/sttr the copy routines use do not).
# riscv64: virt with qemu's own OpenSBI (-bios default: fw_dynamic from qemu's firmware
# folder); an S-mode load or store of a user page faults unless SSTATUS.SUM is set, as the
# copy routine does around its accesses.
declare -A kernel_qemu=(
	[x86_64]="qemu-system-x86_64 -accel tcg -cpu max,fsrm=off -smp 1 -m 256M"
	[i386]="qemu-system-i386 -accel tcg -cpu max,fsrm=off -smp 1 -m 256M"
	[armv6]="qemu-system-arm -M raspi0"
	[aarch64]="qemu-system-aarch64 -M virt -cpu max -accel tcg -smp 1 -m 256M"
	[riscv64]="qemu-system-riscv64 -M virt -bios default -accel tcg -smp 1 -m 256M"
)
declare -A kernel_console=([x86_64]=ttyS0 [i386]=ttyS0 [armv6]=ttyAMA0 [aarch64]=ttyAMA0 [riscv64]=ttyS0)
# kernel-boot's init, a user-space program: generator/toolchain.rs's compiler and arch
# flags, always -static (tests/toolchain_scripts.rs checks both this and kernel_cross).
# The kernel build itself takes its flags from kbuild (which passes -marm for ARM).
declare -A kernel_init_cc=(
	[x86_64]="gcc -static"
	[i386]="gcc -m32 -static"
	[armv6]="arm-linux-gnueabi-gcc -march=armv6 -marm -static"
	[aarch64]="aarch64-linux-gnu-gcc -static"
	[riscv64]="riscv64-linux-gnu-gcc -static"
)
# Debian packages: PKG:CHECK (a command or an absolute path)
declare -A kernel_tools=(
	[x86_64]="qemu-system-x86:qemu-system-x86_64 libc6-dev:/usr/lib/x86_64-linux-gnu/libc.a"
	[i386]="qemu-system-x86:qemu-system-i386 gcc-12-multilib:/usr/lib32/libc.a"
	[armv6]="qemu-system-arm:qemu-system-arm gcc-arm-linux-gnueabi:arm-linux-gnueabi-gcc libc6-dev-armel-cross:/usr/arm-linux-gnueabi/lib/libc.a"
	[aarch64]="qemu-system-arm:qemu-system-aarch64 gcc-aarch64-linux-gnu:aarch64-linux-gnu-gcc libc6-dev-arm64-cross:/usr/aarch64-linux-gnu/lib/libc.a"
	[riscv64]="qemu-system-misc:qemu-system-riscv64 gcc-riscv64-linux-gnu:riscv64-linux-gnu-gcc libc6-dev-riscv64-cross:/usr/riscv64-linux-gnu/lib/libc.a"
)

kernel_die() { echo "$(basename "$0"): $*" >&2; exit 1; }

kernel_check_version() {
	local v
	for v in "${kernel_versions[@]}"; do [[ $1 == "$v" ]] && return 0; done
	kernel_die "--kernel: ${kernel_versions[*]}, not '$1'"
}
kernel_check_arch() {
	[[ -n ${kernel_make_args[$1]:-} ]] || kernel_die "--arch: ${kernel_arches[*]}, not '$1'"
}

# kernel_need PKG:CHECK... — CHECK is a command name or an absolute path. Missing ones are
# installed with apt-get when running as root; otherwise fail naming the packages.
kernel_need() {
	local want=() item pkg check
	for item in "$@"; do
		pkg=${item%%:*} check=${item#*:}
		if [[ $check == /* ]]; then [[ -e $check ]] && continue
		else command -v "$check" >/dev/null 2>&1 && continue; fi
		want+=("$pkg")
	done
	((${#want[@]})) || return 0
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		echo "installing: ${want[*]}" >&2
		# (kernel-ci's two lanes may both get here: dpkg takes one apt-get at a time)
		mkdir -p "$kernel_cache"
		flock "$kernel_cache/apt.lock" bash -c '
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2 ||
				{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2; }' \
			apt "${want[@]}" || kernel_die "could not install: ${want[*]}"
	else
		kernel_die "missing packages: ${want[*]} (install them, or run as root to have them installed)"
	fi
}

# kernel_need_build_tools VERSION
kernel_need_build_tools() {
	kernel_need make:make gcc:gcc flex:flex bison:bison bc:bc cpio:cpio xz-utils:xz \
		libelf-dev:/usr/include/gelf.h libssl-dev:/usr/include/openssl/ssl.h \
		"linux-source-$1:$(kernel_tarball "$1")"
}

# kernel_tree_locked VERSION COMMAND... — COMMAND (in a subshell) holding the lock of the
# unpacked tree. kernel-ci runs two lanes at once: whatever writes into the pristine tree
# (the unpack, kernel-tree's copygen/<arch>/ files) or copies it (a boot folder's hard
# links) takes it, so that no lane sees the tree half written. Never nested.
kernel_tree_locked() {
	local v=$1
	shift
	mkdir -p "$kernel_cache"
	(
		flock 9
		"$@"
	) 9>"$kernel_cache/linux-$v.lock"
}

# kernel_unpack VERSION — unpack the tree once; the stamp marks a complete unpack (an
# interrupted one is redone).
kernel_unpack() {
	[[ -f $(kernel_src "$1")/.copygen-unpacked ]] || kernel_tree_locked "$1" kernel_unpack_now "$1"
}
kernel_unpack_now() {
	local src tarball
	src=$(kernel_src "$1") tarball=$(kernel_tarball "$1")
	[[ -f $src/.copygen-unpacked ]] && return 0
	echo "unpacking $tarball into $src" >&2
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -xJf "$tarball" -C "$src.tmp" --strip-components=1
	mv "$src.tmp" "$src"
	touch "$src/.copygen-unpacked"
}

# kernel_configure VERSION ARCH -> the build folder kbuild/<version>/<arch>, configured once
# in kernel_tree_config's recipe (a make target, then options to switch off, "-OPTION"); the
# stamp holds the recipe, so a changed recipe reconfigures. Shared by verify/kernel-tree,
# verify/kernel-routines and verify/microbench/tree-routines.sh.
kernel_configure() {
	local v=$1 arch=$2 src out recipe opt
	src=$(kernel_src "$v") out=$kernel_cache/kbuild/$v/$arch recipe=${kernel_tree_config[$arch]}
	if [[ ! -f $out/.config || $(cat "$out/.copygen-recipe" 2>/dev/null) != "$recipe" ]]; then
		echo "configuring $v $arch: $recipe" >&2
		mkdir -p "$out"
		rm -f "$out/.copygen-recipe"
		# shellcheck disable=SC2046,SC2086
		"${kmake[@]}" -s -C "$src" O="$out" ${kernel_make_args[$arch]} "${recipe%% *}" >/dev/null
		for opt in ${recipe#* }; do
			[[ $opt == -* ]] || continue
			"$src/scripts/config" --file "$out/.config" --disable "${opt#-}"
			# shellcheck disable=SC2086
			"${kmake[@]}" -s -C "$src" O="$out" ${kernel_make_args[$arch]} olddefconfig >/dev/null
			grep -qx "# CONFIG_${opt#-} is not set" "$out/.config" ||
				kernel_die "$arch: ${opt#-} is still set in $out/.config"
		done
		if [[ $arch == armv6 ]]; then
			grep -Eqx 'CONFIG_CPU_V6K?=y' "$out/.config" || kernel_die "armv6: no ARMv6 CPU in $out/.config"
		fi
		echo "$recipe" >"$out/.copygen-recipe"
	fi
	echo "$out"
}

# kernel_build_objects VERSION ARCH OBJECT... -> builds them alone in the configured tree
# (unpacked first); prints the build folder. One serial make per object: a single-object
# target can be visited twice (arch/arm and arch/arm/lib), and two parallel visits race on
# the same .o. For the same reason one caller at a time configures and builds in a folder
# (two harness runs at once, e.g. from the test suite, take turns).
kernel_build_objects() {
	local v=$1 arch=$2
	kernel_unpack "$v"
	mkdir -p "$kernel_cache/kbuild"
	(
		flock 8
		kernel_build_objects_now "$@"
	) 8>"$kernel_cache/kbuild/$v-$arch.lock"
}
kernel_build_objects_now() {
	local v=$1 arch=$2 src out log obj
	shift 2
	src=$(kernel_src "$v")
	out=$(kernel_configure "$v" "$arch")
	log=$out/copygen-objects.log
	for obj; do
		# shellcheck disable=SC2086
		"${kmake[@]}" -j1 -C "$src" O="$out" ${kernel_make_args[$arch]} "$obj" >"$log" 2>&1 ||
			{ tail -30 "$log" >&2; kernel_die "$v $arch: could not build $obj"; }
	done
	echo "$out"
}

# The copygen binary the scripts run (built when missing or older than the sources), or
# COPYGEN where it is set: verify/run-tests hands kernel-ci a copy of its build, so
# that the test suite's build beside it, which links target/release/copygen again, never
# replaces the file under a running step.
kernel_copygen() {
	if [[ -n ${COPYGEN:-} ]]; then
		[[ -x $COPYGEN ]] || kernel_die "COPYGEN=$COPYGEN is not an executable"
		echo "$COPYGEN"
		return
	fi
	local bin=$kernel_root/target/release/copygen
	if [[ ! -x $bin ]] || [[ -n $(find "$kernel_root/generator" "$kernel_root/templates" -newer "$bin" -print -quit) ]]; then
		(cd "$kernel_root" && nice -n 5 cargo build --release -q) >&2 || kernel_die "cargo build failed"
	fi
	echo "$bin"
}

# Replace DST with SRC only when the bytes differ, so kbuild's timestamps stay meaningful.
# DST may be a hard link into a pristine tree: it is replaced, never written through.
kernel_install_if_changed() {
	cmp -s "$1" "$2" 2>/dev/null && return 0
	rm -f "$2"
	cp "$1" "$2"
}

kernel_now() { date +%s.%N; }
kernel_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# The KUnit suite `copygen kernel-patch --kunit` adds (6.12 only: 6.1's KUnit cannot map
# user memory): verify/kernel/build.sh asks for it in every 6.12 patch it builds and
# merges kunit-6.12.config, which builds it in; verify/kernel-boot wants its "ok" line.
kernel_kunit_file=lib/copygen_usercopy_kunit.c
kernel_kunit_suite=copygen_usercopy
kernel_kunit_config=$kernel_root/verify/kernel/kunit-6.12.config
kernel_kunit_takes() { [[ $1 == 6.12 ]]; } # VERSION — whether its patches carry the suite

# The arches whose recorder (verify/kernel-record) reuses kernel-boot's build: their boot
# configuration also takes record-<arch>.config (verify/kernel/build.sh). x86_64 only:
# CI records on x86_64, and the others' record fragments would make CI's boot builds of
# them larger for no step of CI (armv6's also undoes boot-armv6.config's build-time cuts
# and switches to -O2); their recorder builds in record/<version>/<arch>[-<preset>].
kernel_record_shared=(x86_64)
kernel_record_shares() {
	local a
	for a in "${kernel_record_shared[@]}"; do [[ $1 == "$a" ]] && return 0; done
	return 1
}
