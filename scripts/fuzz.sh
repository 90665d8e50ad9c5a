#!/usr/bin/env bash
# Runs every Fuzz target of the repository, one after the other, for
# FUZZTIME each (default 2s: the short run of make test; make fuzz runs
# longer). Targets are found in the *_test.go files, so a new Fuzz func is
# run without being listed here. An optional argument is a regexp that
# selects targets by name (scripts/fuzz.sh 'REST|Load').
#
# A failing input is written by go test to the package's
# testdata/fuzz/FuzzX/ directory; it is printed, and the script fails once
# every target has run. Keep it there (git add): go test runs it as a
# regression seed from then on. See docs/fuzzing.md.
set -uo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-2s}
select=${1:-.}
# On the 2 shared cores of make test one worker is enough; make fuzz may
# use more (FUZZ_PARALLEL).
parallel=${FUZZ_PARALLEL:-1}

# file:func of every fuzz target, in a stable order.
mapfile -t targets < <(git ls-files --cached --others --exclude-standard -- '*_test.go' |
	xargs grep -Ho '^func Fuzz[A-Za-z0-9_]*' | sed 's/:func /:/' | sort -u)

# run_one DIR NAME: fuzzes one target; its report goes to stdout.
run_one() {
	local dir=$1 name=$2 t0 out rc execs repro
	t0=$(date +%s)
	out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s \
		-parallel "$parallel" -timeout 10m "$dir" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ]; then
		execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -1)
		printf 'ok    %-28s %-32s %3ss %s\n' "$dir" "$name" "$(($(date +%s) - t0))" "$execs"
		return 0
	fi
	# Go 1.26's fuzz coordinator may report its own -fuzztime deadline
	# as a failure (go.dev/issue/75804, fixed in Go 1.27): a bare
	# "context deadline exceeded", no input written, no test message.
	if grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out" &&
		! grep -q 'seed corpus entry' <<<"$out" && ! grep -Eq '^[[:space:]]+[^[:space:]]+_test\.go:[0-9]+:' <<<"$out"; then
		printf 'ok    %-28s %-32s %3ss (go.dev/issue/75804: the deadline reported as a failure, ignored)\n' "$dir" "$name" "$(($(date +%s) - t0))"
		return 0
	fi
	printf 'FAIL  %-28s %-32s %3ss\n' "$dir" "$name" "$(($(date +%s) - t0))"
	sed 's/^/      /' <<<"$out" | tail -40
	repro=$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' <<<"$out" | tail -1)
	if [ -n "$repro" ]; then
		echo "      reproducer: $dir/$repro (keep it: git add it as a regression seed)"
		echo "      re-run:     go test -run '^${name}/$(basename "$repro")\$' $dir"
	fi
	return 1
}

# Targets run FUZZ_JOBS at a time (default 2: one per core of make test's
# machine); each report is printed whole when its target ends.
jobs=${FUZZ_JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
ran=0
i=0
for t in "${targets[@]}"; do
	file=${t%%:*}
	name=${t##*:}
	[[ $name =~ $select ]] || continue
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	i=$((i + 1))
	(
		run_one "./$(dirname "$file")" "$name" >"$tmp/$i.out"
		echo $? >"$tmp/$i.rc"
		cat "$tmp/$i.out"
	) &
	ran=$((ran + 1))
done
wait

failed=()
for ((j = 1; j <= i; j++)); do
	if [ "$(cat "$tmp/$j.rc" 2>/dev/null)" != 0 ]; then
		failed+=("$(head -1 "$tmp/$j.out")")
		repro=$(grep -o 'reproducer: .*' "$tmp/$j.out")
		[ -n "$repro" ] && failed+=("  $repro")
	fi
done

echo "fuzz: $ran targets, ${fuzztime} each, $jobs at a time, in $(($(date +%s) - start))s"
if [ "$ran" -eq 0 ]; then
	echo "fuzz: no target matches ${select}" >&2
	exit 1
fi
if [ "${#failed[@]}" -gt 0 ]; then
	echo "fuzz: failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
