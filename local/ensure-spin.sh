#!/usr/bin/env bash
# Makes sure spin (the Promela model checker) and a C compiler are here: the
# model test in pkg/idem/model needs both. Installs spin from Debian's
# packages when it is missing and this user may.
set -euo pipefail
command -v gcc >/dev/null || { echo "gcc is needed for the model check (apt-get install gcc)" >&2; exit 1; }
command -v spin >/dev/null && exit 0
echo "• spin not found: installing Debian's spin package"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get install -y -qq spin >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq spin >/dev/null; }) && exit 0
elif command -v sudo >/dev/null && command -v apt-get >/dev/null; then
  (sudo apt-get install -y -qq spin >/dev/null 2>&1 || { sudo apt-get update -qq >/dev/null && sudo apt-get install -y -qq spin >/dev/null; }) && exit 0
fi
echo "could not install spin: install it yourself (Debian/Ubuntu: apt-get install spin; macOS: brew install spin)" >&2
exit 1
