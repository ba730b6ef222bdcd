#!/bin/sh
# fuzz.sh TIME: run every fuzz target of the module for TIME each (go test
# -fuzztime syntax: 5s, 1m, 1000x). Targets are found in the source, so a
# new Fuzz function is picked up without editing the Makefile. go test
# -fuzz takes one package and one target per invocation, hence the loop.
# New failing inputs land under the package's testdata/fuzz and then run
# as plain unit tests in every `go test`.
set -eu
time=${1:?usage: fuzz.sh TIME}
go=${GO:-go}
# -parallel bounds the fuzzing workers: the machines are shared.
parallel=${FUZZ_PARALLEL:-2}
found=0
for file in $(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | sort); do
	dir=./$(dirname "$file")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		found=$((found + 1))
		echo "fuzz: $dir $target for $time"
		# The fuzzing engine itself sometimes ends a run with "context
		# deadline exceeded" as -fuzztime runs out while a worker is busy
		# (no failing input is written): that is no finding, so such a run
		# is tried once more. A real failure writes its input and fails.
		out=$(mktemp)
		if ! "$go" test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -parallel "$parallel" "$dir" >"$out" 2>&1; then
			cat "$out"
			if grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
				echo "fuzz: $target: the engine's own deadline, not a finding; once more"
				"$go" test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -parallel "$parallel" "$dir" || { rm -f "$out"; exit 1; }
			else
				rm -f "$out"
				exit 1
			fi
		else
			cat "$out"
		fi
		rm -f "$out"
	done
done
if [ "$found" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz: $found targets passed"
