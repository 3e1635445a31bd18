# shellcheck shell=bash disable=SC2034 # (variables used by the scripts that source this)
# The kernel build verify/kernel-boot and verify/kernel-record share (sourced after lib.sh):
# one build folder per kernel version and arch, $kernel_cache/boot/<version>/<arch>, whose
# source tree is hard links into the unpacked one with private copies of the files a
# `copygen kernel-patch` patch touches. Switching presets installs only the files whose
# bytes change, with a new mtime (also when a file goes back to the pristine one), so
# kbuild rebuilds exactly what depends on them: the generated .S when two presets are
# wired alike, and every object that includes a changed header otherwise (6.12 x86_64's
# per-CPU presets change the inline call site in uaccess_64.h).
#
# One configuration per (version, arch): base + boot-<arch>.config + boot-<arch>-<version>
# .config + boot-<version>.config, and record-<arch>.config for the arches in
# kernel_record_shared (their recorder reuses the boot build). Which step needs what:
#   boot-<arch>*.config   kernel-boot and kernel-record: the machine, console, initramfs,
#                         and the mitigations objtool checks
#   boot-<version>.config kernel-boot: the kernel's usercopy self-test (6.1's
#                         test_user_copy.ko, 6.12's KUnit suite, built in; kernel-record
#                         boots with kunit.enable=0 so the recorded guest runs no suite)
#   record-<arch>.config  kernel-record: kprobe events, tracefs, networking over loopback
#                         and what busybox needs; kernel-boot does not use them (they do
#                         not change the copy routines or their call sites)
#   kunit-6.12.config     a patched 6.12 kernel: the patch's own KUnit suite (every 6.12
#                         patch made here carries it: kernel-patch --kunit), built in
#
# After each build the code sections of vmlinux (.text, the alternatives, the exception
# table) are hashed under a key of the sources (the .config and every file the patch
# touches): a fresh build (empty build folder) records the hash; a later build of the
# same sources after switching presets must give the same bytes, or the build fails.
# And every object whose kbuild dependencies (.cmd) name a file installed by the switch
# must be newer than the switch.

# The patch's author (a fixed identity: the build must not depend on the machine's git
# config). One for both scripts: the patch's MAINTAINERS entry names it, and a file that
# differs would make the same preset two sources.
kernel_build_author="copygen kernel-boot <kernel-boot@copygen.invalid>"

# kernel_build_prepare VERSION ARCH PRESET AUTHOR [FILE.S] — the patch (PRESET empty: the
# stock kernel), the shared tree and its configuration. Sets dir src out patch new_file
# variants glue touched_now, and holds a lock on the folder until the script ends.
kernel_build_prepare() {
	local version=$1 arch=$2 preset=$3 author=$4 override=${5:-} pristine fresh f stage
	local -a kargs
	read -r -a kargs <<<"${kernel_make_args[$arch]}"
	pristine=$(kernel_src "$version")
	dir=$kernel_cache/boot/$version/$arch
	src=$dir/src out=$dir/out patch=$dir/copygen.patch
	mkdir -p "$dir"
	exec {kernel_build_lock}>"$dir/lock"
	flock "$kernel_build_lock"
	# 1. The patch, as a kernel developer would get it. `kernel-patch` fault-injects every
	# routine before it writes (tens of seconds for a per-CPU preset): a patch made by the
	# same binary from the same strategy file is kept (patches/<key>), so booting one
	# preset on three CPU models makes it once.
	fresh=$(mktemp "$dir/copygen.patch.XXXXXX")
	if [[ -n $preset ]]; then
		local key strategy_file=$kernel_root/generator/strategies/$preset.toml
		local -a kunit=()
		kernel_kunit_takes "$version" && kunit=(--kunit)
		key=$( {
			sha256sum <"$copygen"
			echo "$preset $version $arch $author ${kunit[*]}"
			[[ ! -f $strategy_file ]] || cat "$strategy_file"
			[[ ! -f $preset ]] || cat "$preset" # (a strategy file given by its path)
		} | sha256sum | cut -c1-16)
		mkdir -p "$dir/patches"
		if [[ -s $dir/patches/$key ]]; then
			cp "$dir/patches/$key" "$fresh"
			echo "$(basename "$0"): the patch of $preset made by this copygen before (patches/$key)" >&2
		else
			"$copygen" kernel-patch "$preset" --kernel "$version" --arch "$arch" --author "$author" "${kunit[@]}" -o "$fresh" ||
				{ rm -f "$fresh"; kernel_die "$preset: copygen kernel-patch refused it"; }
			cp "$fresh" "$dir/patches/$key"
		fi
	fi
	mv "$fresh" "$patch"
	# The glue: the patch's sections for files the tree has (not the generated file's;
	# `index` lines left out). Presets of one glue switch by recompiling the generated file.
	glue=$(awk '/^-- $/ { exit } /^diff --git / { flush(); sec = ""; diff = 1 } diff && !/^index / { sec = sec $0 "\n" }
		function flush() { if (sec !~ /\nnew file mode/) printf "%s", sec }
		END { flush() }' "$patch" | sha256sum | cut -c1-12)
	echo "$(basename "$0"): build folder $dir (glue $glue${preset:+, $preset}; last: $(cat "$dir/glue" 2>/dev/null || echo none))" >&2
	if [[ -s $patch ]]; then
		(cd "$pristine" && git apply --check "$patch") || kernel_die "the patch does not apply to $pristine"
		sed -n '/^Subject:/,/^---$/p' "$patch" | sed 's/^/  | /' >&2
	fi

	# 2. The source tree: hard links into the pristine tree; files the patch touches (now
	# or last time) are private copies, replaced only where their bytes change.
	[[ -f $src/.copygen-unpacked ]] || { rm -rf "$src"; kernel_tree_locked "$version" cp -al "$pristine" "$src"; }
	stage=$dir/stage
	rm -rf "$stage" && mkdir -p "$stage"
	# (with the files it deletes: arm64's copy_{from,to}_user.S, superseded)
	touched=$(sed -n 's|^+++ b/||p; s|^--- a/||p' "$patch" | sort -u)
	for f in $touched; do
		[[ -f $pristine/$f ]] || continue
		mkdir -p "$stage/$(dirname "$f")"
		cp "$pristine/$f" "$stage/$f"
	done
	[[ ! -s $patch ]] || patch -s -p1 -d "$stage" <"$patch"
	# (the generated routine's file; not the KUnit suite's, which is new too)
	new_file=$(sed -n 's|^+++ b/||p' "$patch" | while read -r f; do
		[[ -f $pristine/$f || $f == "$kernel_kunit_file" ]] || echo "$f"
	done)
	[[ -z $override ]] || cp "$override" "$stage/$new_file"
	# x86: which variant the patched entry point enters (verify/kernel/copygen_variant.c,
	# built in next to the routine; its table of the preset's routines is written here).
	# kernel-patch makes the x86 routine one for both directions; a per-CPU preset's entry
	# point is the file's first function, and names each variant in a comment before the
	# jump to its routine, plain or in its ALTERNATIVE slot: `/* variant `NAME`: ... */`
	# ... `jmp ROUTINE` (a jump to a local .L label skips a slot), or before the routine's
	# inner label where an entry point falls into it (6.1's three entry points, which
	# copygen_variant.c finds through a real site: COPYGEN_SITE). (The stock kernel
	# gets an empty table: the initcall then compiles to nothing.)
	variants=
	if [[ $arch == x86_64 || $arch == i386 ]]; then
		local asm entry routes table v r mk=arch/x86/lib/Makefile
		routes=
		if [[ -n $new_file ]]; then
			asm=$stage/$new_file
			entry=$(sed -n 's/^SYM_FUNC_START(\(.*\))$/\1/p' "$asm" | head -1)
			routes=$(awk '/^\t\/\* variant `/ { split($0, w, "`"); v = w[2] }
				v != "" && match($0, /(jmp[ \t]+|^SYM_INNER_LABEL\()[A-Za-z_][A-Za-z0-9_]*/) {
					r = substr($0, RSTART, RLENGTH); sub(/^(jmp[ \t]+|SYM_INNER_LABEL\()/, "", r)
					if (!(v in seen)) print v, r
					seen[v] = 1; v = ""
				}' "$asm")
			variants=$(cut -d' ' -f1 <<<"$routes")
		fi
		mkdir -p "$stage/arch/x86/lib"
		{
			echo "/* Written by copygen's verify/kernel-boot: the routines of ${preset:-the stock kernel}. */"
			if [[ -n $routes ]]; then
				# (by assembler name: the glue may declare the same symbols as C functions)
				echo "extern const u8 copygen_entry_code[] __asm__(\"$entry\");"
				echo "#define COPYGEN_ENTRY copygen_entry_code"
				! grep -q '^SYM_FUNC_START(copygen_copy_user_rep_good)$' "$asm" ||
					echo "#define COPYGEN_SITE 1"
				table=()
				while read -r v r; do
					echo "extern const u8 copygen_routine_${#table[@]}[] __asm__(\"$r\");"
					table+=("{ \"$v\", copygen_routine_${#table[@]} },")
				done <<<"$routes"
				echo "#define COPYGEN_VARIANTS ${table[*]}"
			fi
		} >"$stage/arch/x86/lib/copygen_variant_table.h"
		cp "$kernel_root/verify/kernel/copygen_variant.c" "$stage/arch/x86/lib/copygen_variant.c"
		[[ -f $stage/$mk ]] || cp "$pristine/$mk" "$stage/$mk"
		echo 'obj-y += copygen_variant.o' >>"$stage/$mk"
		touched=$(printf '%s\n' $touched $mk arch/x86/lib/copygen_variant.c arch/x86/lib/copygen_variant_table.h | sort -u)
	fi
	# Files touched last time and not now go back to the pristine bytes as a copy with a
	# new mtime (a hard link would keep the tarball's old mtime, older than the objects
	# built from the patched file, and kbuild would keep them).
	touched_now=()
	touch "$dir/switched"
	for f in $(cat "$dir/touched" 2>/dev/null || true); do
		grep -qxF "$f" <<<"$touched" && continue
		if [[ -f $pristine/$f ]]; then
			cmp -s "$pristine/$f" "$src/$f" || touched_now+=("$f")
			kernel_install_if_changed "$pristine/$f" "$src/$f"
		else
			rm -f "$src/$f"
		fi
	done
	for f in $touched; do
		# a file the patch deletes is gone from the build tree too
		if [[ ! -e $stage/$f ]]; then
			[[ -e $src/$f ]] && { rm -f "$src/$f"; touched_now+=("$f"); }
			continue
		fi
		mkdir -p "$src/$(dirname "$f")"
		cmp -s "$stage/$f" "$src/$f" 2>/dev/null || touched_now+=("$f")
		kernel_install_if_changed "$stage/$f" "$src/$f"
	done
	echo "$touched" >"$dir/touched"
	echo "$glue" >"$dir/glue"

	# 3. Configuration, redone when the fragments change; each option's last line over
	# the fragments must have been taken (`is not set` also holds for an option the
	# configuration no longer offers).
	local base frag_sum missing
	local -a fragments=("$kernel_root/verify/kernel/boot-$arch.config")
	[[ -f $kernel_root/verify/kernel/boot-$arch-$version.config ]] && fragments+=("$kernel_root/verify/kernel/boot-$arch-$version.config")
	fragments+=("$kernel_root/verify/kernel/boot-$version.config")
	kernel_record_shares "$arch" && fragments+=("$kernel_root/verify/kernel/record-$arch.config")
	# (the patch's KUnit suite, on the kernels whose patches carry it)
	[[ -n $preset ]] && kernel_kunit_takes "$version" && fragments+=("$kernel_kunit_config")
	base=${kernel_boot_base[$arch]}
	kernel_build_config="$base + ${fragments[*]##*/}"
	# (the option lines only: a comment edit keeps the build)
	frag_sum=$( (echo "$base"; cat "${fragments[@]}" | grep -E '^CONFIG_|^# CONFIG_.* is not set$') | sha256sum | cut -c1-16)
	if [[ ! -f $out/.config || $(cat "$dir/config.sum" 2>/dev/null) != "$frag_sum" ]]; then
		# (a new configuration starts from an empty folder: no object of an older one stays
		# behind, so a build after it is a fresh one)
		echo "$(basename "$0"): configuring $out ($kernel_build_config)" >&2
		rm -rf "$out" && mkdir -p "$out"
		rm -f "$dir/config.sum"
		"${kmake[@]}" -s -C "$src" O="$out" "${kargs[@]}" "$base" >/dev/null
		(cd "$out" && "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${fragments[@]}" >"$dir/merge.log" 2>&1) ||
			{ cat "$dir/merge.log" >&2; kernel_die "merge_config.sh failed"; }
		# (its "override" notes are the fragments changing the base's choices: expected)
		"${kmake[@]}" -s -C "$src" O="$out" "${kargs[@]}" olddefconfig >>"$dir/merge.log" 2>&1 ||
			{ cat "$dir/merge.log" >&2; kernel_die "olddefconfig failed"; }
		missing=$(cat "${fragments[@]}" | grep -E '^CONFIG_|^# CONFIG_.* is not set$' |
			awk 'FNR == NR { if (/^CONFIG_/) { k = $0; sub(/=.*/, "", k); set[k] = $0 } next }
				{ k = $0; sub(/^# /, "", k); sub(/[= ].*/, "", k); if (!(k in v)) o[n++] = k; v[k] = $0 }
				END { for (i = 0; i < n; i++) { k = o[i]; l = v[k]
					if (l ~ /^#/ ? (k in set) : set[k] != l) print l } }' "$out/.config" - || true)
		[[ -z $missing ]] || kernel_die "options the kernel config did not take: $missing"
		echo "$frag_sum" >"$dir/config.sum"
	fi
}

# kernel_build_make VERSION ARCH TARGET... — build in the folder kernel_build_prepare set
# up; warnings fail (objtool's included; the log keeps them). Then the checks of a switch
# (above). Sets build_time.
kernel_build_make() {
	local version=$1 arch=$2 t log fresh_build=0 f o deps stale linked n_dep n_all key fp ref
	shift 2
	local -a kargs
	read -r -a kargs <<<"${kernel_make_args[$arch]}"
	[[ -f $out/vmlinux ]] || fresh_build=1
	t=$(kernel_now)
	log=$dir/build.log
	if ! "${kmake[@]}" -C "$src" O="$out" "${kargs[@]}" "$@" >"$log" 2>&1; then
		grep -iE 'error|warning' "$log" | head -40 >&2
		kernel_die "kernel build failed (log: $log)"
	fi
	if grep -i 'warning' "$log" >&2; then kernel_die "kernel build warnings (log: $log)"; fi
	build_time=$(kernel_since "$t")

	# Every object kbuild built from a file the switch installed was rebuilt after it.
	n_all=$(find "$out" -name '.*.o.cmd' | wc -l)
	for f in "${touched_now[@]}"; do
		[[ $f == *.h ]] || continue
		deps=$(find "$out" -name '.*.o.cmd' -print0 | xargs -0 grep -lF -- "/$f" || true)
		n_dep=$(grep -c . <<<"$deps" || true)
		stale=$(while read -r c; do
			[[ -n $c ]] || continue
			o=$(basename "$c" .cmd) o=$(dirname "$c")/${o#.}
			[[ ! -f $o || $o -nt $dir/switched ]] || echo "${o#"$out"/}"
		done <<<"$deps")
		# (an object of an earlier preset that this build no longer links is no matter: only
		# the members of the build's archives and the modules' objects count)
		if [[ -n $stale ]]; then
			linked=$( (cd "$out" && find . -name '*.a' -exec ar t {} + 2>/dev/null
				find . -name '*.mod' -exec cat {} + 2>/dev/null) | sed 's|^\./||' | tr ' ' '\n' | sort -u)
			stale=$(grep -xF -f <(printf '%s\n' "$linked") <<<"$stale" || true)
		fi
		[[ -z $stale ]] || kernel_die "$f changed, but kbuild kept objects built from the old one: $(head -5 <<<"$stale" | tr '\n' ' ')"
		echo "$(basename "$0"): $f changed: $n_dep of $n_all objects depend on it, all rebuilt" >&2
	done

	# The code sections of vmlinux against a fresh build of the same sources.
	key=$( {
		cat "$out/.config"
		for f in $(cat "$dir/touched"); do echo "$f"; [[ ! -e $src/$f ]] || sha256sum <"$src/$f"; done
	} | sha256sum | cut -c1-16)
	fp=$(kernel_code_hashes "$arch" "$out/vmlinux")
	ref=$kernel_cache/boot/fingerprints/$version-$arch-$key
	mkdir -p "$(dirname "$ref")"
	if ((fresh_build)); then
		echo "$fp" >"$ref"
		echo "$(basename "$0"): fresh build: code sections recorded as ${ref#"$kernel_cache"/}" >&2
	elif [[ -f $ref ]]; then
		if [[ $fp != "$(cat "$ref")" ]]; then
			diff <(cat "$ref") <(echo "$fp") >&2 || true
			kernel_die "these sources gave other code than a fresh build of them (${ref#"$kernel_cache"/}): switching presets left stale objects"
		fi
		echo "$(basename "$0"): code sections identical to a fresh build of the same sources (${ref#"$kernel_cache"/})" >&2
	fi
}

# kernel_code_hashes ARCH VMLINUX — "SECTION SHA256" for each code section vmlinux has.
kernel_code_hashes() {
	local cross=${kernel_cross[$1]} s tmp sections
	tmp=$(mktemp)
	# (kept, not piped into grep -q: a SIGPIPE'd readelf would fail the pipeline)
	sections=$("${cross}readelf" -SW "$2")
	for s in .text .altinstr_replacement .altinstructions __ex_table; do
		grep -qF " $s " <<<"$sections" || continue
		"${cross}objcopy" -O binary --only-section="$s" "$2" "$tmp"
		echo "$s $(sha256sum <"$tmp" | cut -c1-64)"
	done
	rm -f "$tmp"
}

# kernel_build_check_routine ARCH — every global function of the generated object is in
# vmlinux with the same size (so no other definition won).
kernel_build_check_routine() {
	local cross=${kernel_cross[$1]} obj vsyms funcs fs f size vsize
	obj=$out/${new_file%.S}.o
	[[ -f $obj ]] || kernel_die "no $obj: the patch's Makefile line did not build it"
	vsyms=$("${cross}nm" -S "$out/vmlinux")
	funcs=$("${cross}readelf" -Ws "$obj" | awk '$4 == "FUNC" && $5 == "GLOBAL" && $7 != "UND" { print $8 "=" $3 }')
	[[ -n $funcs ]] || kernel_die "$obj defines no global function"
	for fs in $funcs; do
		f=${fs%%=*} size=${fs#*=}
		vsize=$(awk -v s="$f" '$4 == s { print $2 }' <<<"$vsyms")
		[[ -n $vsize ]] || kernel_die "vmlinux lacks $f"
		((16#$vsize == size)) || kernel_die "vmlinux's $f has $((16#$vsize)) bytes, the generated one $size"
	done
	echo "$(basename "$0"): in vmlinux: $(tr '\n' ' ' <<<"$funcs")" >&2
}
