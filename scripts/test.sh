#!/usr/bin/env bash
# make test: lint, unit tests, then integration tests against real services.
# The test environment comes up while the unit tests run; whatever this run
# started is stopped again at the end, whatever was already up stays up.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p .testenv
record=.testenv/started-by-test.$$
envlog=.testenv/testenv-up.$$.log
testlog=.testenv/go-test.$$.log # go test's output, checked for leaked secrets
: >"$record"
envpid=
cleanup() {
	local rc=$?
	if [ -n "$envpid" ]; then kill "$envpid" 2>/dev/null || true; wait "$envpid" 2>/dev/null || true; fi
	scripts/testenv down --only "$record" || true
	rm -f "$envlog" "$testlog"
	exit "$rc"
}
trap cleanup EXIT

start=$(date +%s)
echo "== test environment: starting in the background (log: $envlog)"
scripts/testenv up --record "$record" >"$envlog" 2>&1 &
envpid=$!

echo "== lint"
make --no-print-directory lint

echo "== Java connector host: test plugins, then the host with its tests (mvn)"
scripts/javahost.sh test
export KCD_TEST_JAVA_HOST_DIR=$PWD/javahost/target/javahost

echo "== unit tests (-race -short)"
go test -race -short ./... 2>&1 | tee -a "$testlog"

echo "== scheduling-sensitive tests (no race detector: see raft/batching_norace_test.go)"
go test -short -count=1 -run '^TestBatching' ./raft/

echo "== fuzz targets, 2s each (make fuzz runs longer)"
scripts/fuzz.sh

echo "== waiting for the test environment"
set +e
wait "$envpid"
envrc=$?
set -e
envpid=
cat "$envlog"
if [ "$envrc" -ne 0 ]; then
	echo "test environment failed to come up (exit $envrc)" >&2
	exit "$envrc"
fi
set -a
# shellcheck disable=SC1091
[ -f .testenv/env ] && . .testenv/env
set +a

echo "== integration tests"
# Per package up to 20 minutes: daemon/systemtest holds the 2-minute chaos
# schedule, which refuses to start when go test's timeout leaves it too little.
go test -race -count=1 -timeout 20m -run '^TestIntegration' ./... 2>&1 | tee -a "$testlog"

# Tests put secrets starting kcd-canary-secret- in connector configs; none
# may show in any output (node logs are checked by daemon/systemtest).
echo "== no secret in the test output"
if grep -q 'kcd-canary-secret-[A-Za-z0-9_]' "$testlog"; then
	echo "a secret value (kcd-canary-secret-...) leaked into the test output, lines:" \
		"$(grep -n 'kcd-canary-secret-[A-Za-z0-9_]' "$testlog" | cut -d: -f1 | tr '\n' ' ')" >&2
	exit 1
fi

echo "== make test passed in $(( $(date +%s) - start ))s"
