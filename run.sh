#!/usr/bin/env bash
# run.sh: build the kit into bin/, then run the whole experiment.
#   ./run.sh --block=5ms --conc=4,16,64      (./run.sh --help for every flag)
# The kit is built where run.sh lives; the experiment runs where you stand,
# so a relative --out or --replay is yours (the default --out is the kit's results/).
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "$0")" && pwd)
if ! command -v go >/dev/null 2>&1; then
  echo "run.sh: Go is not on PATH (the kit needs Go 1.26)" >&2
  exit 2
fi
cd "$root"
mkdir -p bin
go build -o bin/ ./loopserver ./poolserver ./goserver ./loadgen ./prober ./internal/cmd/experiment
[ -d report ] && go build -o bin/ ./report
cd "$here"
exec "$root/bin/experiment" --bin "$root/bin" "$@"
