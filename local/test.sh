#!/usr/bin/env bash
# make test's steps, in go test -json on stdout for gotestsum --raw-command
# (which prints a line per package, what failed in full, and the closing
# "DONE N tests[, N failures][, N errors]"): every package's tests, then
# a short run of each fuzz target of $FUZZ_TARGETS
# (dir:FuzzX, dir under pkg/idem). golangci-lint runs beside them (the tests
# mostly wait on their engines). A step that fails stops the steps after it;
# what did not run, and a lint finding, each go to stderr as one line, which
# gotestsum lists under "=== Errors" and counts in its closing line, so that
# a cut-short run never reads as a whole one. Exits 1 when anything failed.
set -u
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20000x}
mkdir -p bin/local
"$GO" tool -modfile=tools/go.mod golangci-lint run ./... >bin/local/lint.txt 2>&1 &
lint=$!

failed= notrun=()
step() { # step NAME COMMAND...: runs COMMAND unless an earlier step failed
  if [ -n "$failed" ]; then notrun+=("$1"); return; fi
  "${@:2}" || failed=$1
}
step "go test ./..." "$GO" test -json -count=1 -timeout 15m ./...
for f in ${FUZZ_TARGETS:-}; do
  step "${f#*:}" "$GO" test -json -run '^$' -fuzz "^${f#*:}\$" -fuzztime "$FUZZTIME" "./pkg/idem/${f%%:*}"
done

st=0
if [ -n "$failed" ]; then
  st=1
  [ ${#notrun[@]} -gt 0 ] && echo "not run, after $failed failed: ${notrun[*]}" >&2
fi
if wait "$lint"; then
  echo "golangci-lint: $(tail -n 1 bin/local/lint.txt)"
else
  st=1
  cat bin/local/lint.txt
  echo "golangci-lint failed: its findings are above (make lint)" >&2
fi
exit "$st"
