# shellcheck shell=bash disable=SC2034 # (variables used by the scripts that source this)
# Shared by verify/kernel-tree, verify/kernel-boot and verify/kernel-ci (sourced, bash).
# The Linux 6.1 tree is unpacked once into verify/.cache/linux; every build is out of tree (O=).

kernel_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# COPYGEN_KERNEL_CACHE moves the cache (tree, build folders) elsewhere, e.g. a CI cache.
kernel_cache=${COPYGEN_KERNEL_CACHE:-$kernel_root/verify/.cache}
kernel_src=$kernel_cache/linux
kernel_tarball=/usr/src/linux-source-6.1.tar.xz
# The machine is shared: kernel builds run niced on two jobs.
kmake=(nice -n 10 make -j2)

kernel_die() { echo "$(basename "$0"): $*" >&2; exit 1; }

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
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${want[@]}" >&2 ||
			{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${want[@]}" >&2; } ||
			kernel_die "could not install: ${want[*]}"
	else
		kernel_die "missing packages: ${want[*]} (install them, or run as root to have them installed)"
	fi
}

kernel_need_build_tools() {
	kernel_need make:make gcc:gcc flex:flex bison:bison bc:bc cpio:cpio xz-utils:xz \
		libelf-dev:/usr/include/gelf.h libssl-dev:/usr/include/openssl/ssl.h \
		linux-source-6.1:$kernel_tarball
}

# Unpack the tree once; the stamp marks a complete unpack (an interrupted one is redone).
kernel_unpack() {
	[[ -f $kernel_src/.copygen-unpacked ]] && return 0
	echo "unpacking $kernel_tarball into $kernel_src" >&2
	rm -rf "$kernel_src" "$kernel_cache/linux.tmp"
	mkdir -p "$kernel_cache/linux.tmp"
	tar -xJf "$kernel_tarball" -C "$kernel_cache/linux.tmp" --strip-components=1
	mv "$kernel_cache/linux.tmp" "$kernel_src"
	touch "$kernel_src/.copygen-unpacked"
}

# Replace DST with SRC only when the bytes differ, so kbuild's timestamps stay meaningful.
kernel_install_if_changed() {
	cmp -s "$1" "$2" 2>/dev/null || cp "$1" "$2"
}

kernel_now() { date +%s.%N; }
kernel_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
