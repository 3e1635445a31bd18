# shellcheck shell=bash
# COPYGEN_CI_ONLY: run a subset of verify/run-tests and verify/kernel-ci locally (sourced
# by both). A comma-separated list of shell patterns over the names both print in their
# time tables: run-tests' phases (install-deps, build, emit-check, catalog-check, fmt,
# clippy, test-build, kernel-ci, tests; build always runs) and kernel-ci's steps ("kernel-tree x86_64",
# kernel-routines, "kernel-boot 6.12 i386 movsl", ...). A pattern that starts
# with "kernel-" selects kernel-ci steps (and so run-tests' kernel-ci phase); "kernel-ci"
# selects all of them. E.g.
#   COPYGEN_CI_ONLY='fmt,clippy' verify/run-tests
#   COPYGEN_CI_ONLY='kernel-boot 6.12 x86_64*,kernel-record 6.12*' verify/kernel-ci
# CI (CI=true) runs everything: there the variable is refused, and so are kernel-ci's
# KERNEL_CI_BOOTS and KERNEL_CI_CPUS.

ci_only=${COPYGEN_CI_ONLY:-}
if [[ ${CI:-} == true ]]; then
	for v in COPYGEN_CI_ONLY KERNEL_CI_BOOTS KERNEL_CI_CPUS; do
		if [[ -n ${!v:-} ]]; then
			echo "$(basename "$0"): $v is set, but CI (CI=true) runs every step: unset it" >&2
			exit 2
		fi
	done
fi

# ci_selected NAME — whether the step or phase NAME runs.
ci_selected() {
	local p
	[[ -n $ci_only ]] || return 0
	local IFS=,
	for p in $ci_only; do
		# shellcheck disable=SC2053 # (a pattern, on purpose)
		[[ $1 == $p || $p == kernel-ci ]] && return 0
		[[ $1 == kernel-ci && $p == kernel-* ]] && return 0
	done
	return 1
}
