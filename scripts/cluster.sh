#!/usr/bin/env bash
# make cluster / make cluster-down: a three-node kcd cluster on loopback.
#
#   node  REST                    Raft peers
#   1     http://127.0.0.1:18081  127.0.0.1:17001
#   2     http://127.0.0.1:18082  127.0.0.1:17002
#   3     http://127.0.0.1:18083  127.0.0.1:17003
#
# Data and logs go to .cluster/ (git-ignored). The data plane is $KCD_KAFKA
# (bootstrap servers) when set; otherwise node 1 runs the embedded dev broker
# on 127.0.0.1:19092 and the other nodes use it.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=.cluster
KCD=${KCD_BIN:-bin/kcd}
INITIAL=1=127.0.0.1:17001,2=127.0.0.1:17002,3=127.0.0.1:17003

up() {
	mkdir -p "$DIR"
	for id in 1 2 3; do
		if pid=$(cat "$DIR/$id.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
			echo "node $id already running (pid $pid)"
			continue
		fi
		local kafka=(--bootstrap-servers "${KCD_KAFKA:-127.0.0.1:19092}")
		if [ -z "${KCD_KAFKA:-}" ] && [ "$id" = 1 ]; then
			kafka=(--dev-kafka --dev-kafka-port 19092)
		fi
		"$KCD" --node-id "$id" --data-dir "$DIR/node$id" \
			--rest-addr "127.0.0.1:1808$id" --peer-addr "127.0.0.1:1700$id" \
			--initial-cluster "$INITIAL" "${kafka[@]}" >"$DIR/node$id.log" 2>&1 &
		echo $! >"$DIR/$id.pid"
		echo "node $id started (pid $!, REST http://127.0.0.1:1808$id, log $DIR/node$id.log)"
	done
	for _ in $(seq 1 100); do
		if curl -sf http://127.0.0.1:18081/kcd/v1/cluster 2>/dev/null | grep -q '"leader":[1-9]'; then
			echo "cluster is up: bin/kcctl --server http://127.0.0.1:18081 cluster status"
			return 0
		fi
		sleep 0.1
	done
	echo "no leader after 10s; see $DIR/node*.log" >&2
	return 1
}

down() {
	for id in 3 2 1; do
		if pid=$(cat "$DIR/$id.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
			kill "$pid"
			for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$pid" 2>/dev/null || true
			echo "node $id stopped"
		fi
		rm -f "$DIR/$id.pid"
	done
}

case "${1:-up}" in
up) up ;;
down) down ;;
clean) down; rm -rf "$DIR" ;;
*) echo "usage: scripts/cluster.sh up|down|clean" >&2; exit 2 ;;
esac
