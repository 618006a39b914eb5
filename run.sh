#!/usr/bin/env bash
# run.sh: build the kit and run the experiment.
#
# For now the experiment orchestrator does not exist yet (its issue is open):
# this builds every program into bin/ and starts the loop server in the
# foreground with the flags given (--block, --block-mode, --engine, ...), so
# you can point curl or wrk at it. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
go build -o bin/ ./loopserver
echo "run.sh: the full experiment (sweep, stall, offload, trace, cliff and the report) is not built yet;"
echo "run.sh: starting the loop server alone. Try: curl -i http://127.0.0.1:8081/slow"
args=()
skip=0
for a in "$@"; do
  if [ "$skip" = 1 ]; then skip=0; continue; fi
  case "$a" in
    --conc=*|-conc=*) echo "run.sh: ignoring $a until the load generator lands" >&2 ;;
    --conc|-conc) echo "run.sh: ignoring $a until the load generator lands" >&2; skip=1 ;;
    *) args+=("$a") ;;
  esac
done
exec bin/loopserver "${args[@]}"
