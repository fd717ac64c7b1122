#!/usr/bin/env bash
# Runs go fuzz targets, each for a fixed time: scripts/fuzz.sh TIME pkg:Target...
#
# A target that finds a failing input fails the run, with the input's file
# (go writes it under the package's testdata/fuzz) and the whole output. A
# run that fails without a failing input is the fuzzing engine itself giving
# up, which happens on an overloaded machine (a worker that misses its
# coordinator's deadline): it is run once more before the failure counts,
# so CI does not go red for what the code did not do.
set -euo pipefail
GO=${GO:-go}
time=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for t in "$@"; do
	pkg=${t%%:*} name=${t#*:}
	for attempt in 1 2; do
		echo "fuzz $name ($time)"
		if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" "$pkg" >"$out" 2>&1; then
			tail -n 1 "$out"
			break
		fi
		if grep -q 'Failing input written to' "$out" || ((attempt == 2)); then
			cat "$out"
			exit 1
		fi
		echo "fuzz $name: the fuzzing engine failed without a failing input; once more:"
		tail -n 5 "$out"
	done
done
