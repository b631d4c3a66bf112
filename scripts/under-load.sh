#!/usr/bin/env bash
# Runs a command beside a CPU load of twice the machine's cores, the way the
# test suites must pass on a busy machine:
#
#   scripts/under-load.sh npm test
#   scripts/under-load.sh npm run test:slow
#   scripts/test-pg.sh scripts/under-load.sh npm test
#
# The load is one busy loop per unit (LOAD=<n> sets how many; the default is
# twice `nproc`). It stops when the command ends, and the script exits with
# the command's exit code. A signal to the script (Ctrl-C, TERM) goes to the
# command; each busy loop also ends on its own once this script is gone, so a
# killed script leaves no load behind.
set -u

if [ "$#" -eq 0 ]; then
  echo "usage: scripts/under-load.sh <command> [arguments...]" >&2
  exit 2
fi

cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
count=${LOAD:-$((2 * cores))}
case $count in
  '' | *[!0-9]*)
    echo "under-load: LOAD must be a whole number, got \`$count\`" >&2
    exit 2
    ;;
esac

loops=()
stop_load() {
  if [ "${#loops[@]}" -gt 0 ]; then
    kill "${loops[@]}" 2>/dev/null
    wait "${loops[@]}" 2>/dev/null
  fi
  loops=()
}
trap stop_load EXIT

# Spins, and every few hundred thousand turns checks that this script is still there.
for ((unit = 0; unit < count; unit++)); do
  sh -c 'while kill -0 "$1" 2>/dev/null; do i=0; while [ "$i" -lt 200000 ]; do i=$((i + 1)); done; done' under-load-cpu "$$" </dev/null >/dev/null 2>&1 &
  loops+=("$!")
done
echo "under-load: ${count} busy loops on ${cores} cores beside \`$*\`" >&2

"$@" &
command_pid=$!
trap 'kill -TERM "$command_pid" 2>/dev/null' INT TERM HUP
while :; do
  wait "$command_pid"
  status=$?
  # A signal interrupts the wait, not the command: wait again until it has ended (a zombie still answers kill -0).
  kill -0 "$command_pid" 2>/dev/null || break
done
stop_load
exit "$status"
