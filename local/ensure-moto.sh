#!/usr/bin/env bash
# Makes sure the local DynamoDB engine can start: moto's server, version 5.2.1.
# Skipped when DYNAMODB_ENDPOINT points at an engine already running (DynamoDB
# Local, say). Never downloads DynamoDB Local: its licence is AWS's own.
set -euo pipefail
want=5.2.1
if [ -n "${DYNAMODB_ENDPOINT:-}" ]; then
  echo "• using the engine at DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT"
  exit 0
fi
have=""
if command -v moto_server >/dev/null 2>&1; then
  have=$(python3 -c 'import moto; print(moto.__version__)' 2>/dev/null || true)
fi
if [ -n "$have" ]; then
  [ "$have" = "$want" ] || echo "• moto $have found (tested with $want); going on with it"
  exit 0
fi
echo "• moto_server not found: installing moto[server]==$want with pip"
if python3 -m pip install --quiet "moto[server]==$want"; then
  command -v moto_server >/dev/null 2>&1 && exit 0
  echo "moto installed, but moto_server is not on PATH: add pip's script directory ($(python3 -m site --user-base)/bin) to PATH" >&2
  exit 1
fi
cat >&2 <<MSG
Could not install moto. The tests need a local DynamoDB engine; either
  - install moto's server yourself:  python3 -m pip install 'moto[server]==$want'
  - or run DynamoDB Local and point the tests at it:
      docker run -p 8000:8000 amazon/dynamodb-local
      export DYNAMODB_ENDPOINT=http://127.0.0.1:8000
MSG
exit 1
