#!/usr/bin/env bash
# make chaos: the fault schedule (TestIntegrationChaos) against a 4-node
# cluster on the test environment's Kafka. With KCD_TEST_KAFKA set it uses
# that broker; otherwise it starts the test environment's Kafka and stops it
# again at the end if it was not running before.
#
#   CHAOS_DURATION  how long faults are injected (Go duration: 10m, 90s, 1h30m)
#   CHAOS_SEED      seed of the schedule (0: from the clock; the report names it)
#   CHAOS_DIR       where the report, the nodes' logs and the records go
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${CHAOS_DURATION:-10m}
seed=${CHAOS_SEED:-0}
dir=${CHAOS_DIR:-.data/chaos}

# go test's -timeout: the schedule plus 10 minutes for set-up and read-back
# (the test bounds itself at the schedule plus 5).
secs=0 rest=$duration
while [[ $rest =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
	n=${BASH_REMATCH[1]}
	case ${BASH_REMATCH[2]} in h) n=$((n * 3600)) ;; m) n=$((n * 60)) ;; esac
	secs=$((secs + n)) rest=${BASH_REMATCH[3]}
done
if [[ -n $rest || $secs -eq 0 ]]; then
	echo "CHAOS_DURATION=$duration: use whole hours, minutes and seconds, e.g. 10m, 90s, 1h30m" >&2
	exit 2
fi

record=
cleanup() {
	local rc=$?
	if [[ -n $record ]]; then scripts/testenv down --only "$record" || true; fi
	exit "$rc"
}
trap cleanup EXIT
if [[ -z ${KCD_TEST_KAFKA:-} ]]; then
	mkdir -p .testenv
	record=.testenv/started-by-chaos.$$
	: >"$record"
	scripts/testenv up --record "$record" kafka
	set -a
	# shellcheck disable=SC1091
	. .testenv/env
	set +a
fi
if [[ -z ${KCD_TEST_KAFKA:-} ]]; then
	echo "no Kafka: scripts/testenv up kafka did not provide KCD_TEST_KAFKA" >&2
	exit 1
fi

rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P) # go test runs in the package's directory
echo "== make chaos: $duration of faults on Kafka $KCD_TEST_KAFKA; report, logs and records in $dir/"
CI=true go test -count=1 -timeout "$((secs + 600))s" -run '^TestIntegrationChaos$' -v ./daemon/systemtest/ \
	-chaos.duration="$duration" -chaos.seed="$seed" \
	-chaos.report="$dir/report.txt" -chaos.logs="$dir/logs"
