#!/usr/bin/env bash
# capture.sh: re-captures testdata/primitive.jsonl from Kafka Connect's own
# primitive converters (capture/Capture.java), with the Kafka Connect jars
# the test environment downloads (or those in KCD_CONNECT_LIBS).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
CONNECT_VERSION=4.3.1
LIBS=${KCD_CONNECT_LIBS:-$ROOT/.cache/connect-$CONNECT_VERSION/libs}

if ! compgen -G "$LIBS/connect-runtime-*.jar" >/dev/null; then
  echo "capture.sh: no Kafka Connect jars in $LIBS; run scripts/testenv up connect" >&2
  exit 1
fi
java -cp "$LIBS/*" "$HERE/capture/Capture.java" "$HERE/testdata/primitive.jsonl"
