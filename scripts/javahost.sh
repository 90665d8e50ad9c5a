#!/usr/bin/env bash
# Builds the Java connector host (javahost/) with Maven.
#   scripts/javahost.sh build DEST [--required]  the host, without its tests, copied to DEST
#   scripts/javahost.sh test                     test plugins, then the host with its tests
# Without Java 17 or Maven, build says so and succeeds (kcd runs its built-in
# connectors without a host) unless --required; test always fails.
set -euo pipefail
cd "$(dirname "$0")/.."

have_tools() {
  command -v mvn >/dev/null 2>&1 || { echo "javahost: mvn is not installed (apt-get install maven)"; return 1; }
  command -v java >/dev/null 2>&1 || { echo "javahost: java is not installed (apt-get install openjdk-17-jdk-headless)"; return 1; }
  local v
  v=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
  if [[ -z $v || ${v%%.*} -lt 17 ]]; then echo "javahost: Java 17 or newer is needed, found ${v:-none}"; return 1; fi
}

case ${1:-} in
build)
  dest=${2:?usage: scripts/javahost.sh build DEST [--required]}
  required=${3:-}
  if ! msg=$(have_tools); then
    echo "$msg; the Java connector host is not built"
    [[ $required == --required ]] && exit 1
    exit 0
  fi
  log=$(mktemp)
  if ! mvn -B -ntp -q -f javahost/pom.xml package -DskipTests >"$log" 2>&1; then
    echo "javahost: mvn package failed:" >&2
    tail -n 30 "$log" >&2
    rm -f "$log"
    [[ $required == --required ]] && exit 1
    echo "javahost: kcd runs its built-in connectors only" >&2
    exit 0
  fi
  rm -f "$log"
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  cp -r javahost/target/javahost "$dest"
  ;;
test)
  have_tools >&2 || exit 1
  mvn -B -ntp -q -f javahost/testplugins/pom.xml package
  mvn -B -ntp -q -f javahost/pom.xml package
  ;;
*)
  echo "usage: scripts/javahost.sh build DEST [--required] | test" >&2
  exit 2
  ;;
esac
