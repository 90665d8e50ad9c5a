#!/usr/bin/env bash
# capture.sh: re-captures the golden fixtures of Kafka Connect's JsonConverter
# from the real Java converter (capture/Capture.java) into testdata/jdk<N>/,
# once per JDK: the default `java`, and each JDK named in KCD_CAPTURE_JAVA
# (space-separated java binaries, e.g. a JDK 21 or 25 one; Double.toString
# changed in JDK 19). It uses the Kafka Connect jars the test environment
# downloads; when they are missing it has scripts/testenv fetch them and stops
# whatever that started.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
CONNECT_VERSION=4.3.1
LIBS=$ROOT/.cache/connect-$CONNECT_VERSION/libs

if ! compgen -G "$LIBS/connect-json-*.jar" >/dev/null; then
  record=$(mktemp)
  trap '"$ROOT/scripts/testenv" down --only "$record"' EXIT
  "$ROOT/scripts/testenv" up --record "$record" connect
fi

capture() {
  local java=$1 major
  major=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
  echo "capture.sh: $java (JDK $major)"
  "$java" -Duser.timezone=UTC -cp "$LIBS/*" "$HERE/capture/Capture.java" "$HERE/testdata/jdk$major"
}

capture java
for j in ${KCD_CAPTURE_JAVA:-}; do
  capture "$j"
done
