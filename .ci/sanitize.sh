#!/usr/bin/env bash
# Builds the C core and the extension with AddressSanitizer and UBSan in a
# copy of the tree and runs the whole test suite against that build.
# Any sanitizer report aborts the run (exit code != 0).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$work")
cd "$work"
MLI_SANITIZE=1 python setup.py -q build_ext --inplace --force >/dev/null 2>build.log || { cat build.log; exit 1; }
asan="$(${CC:-cc} -print-file-name=libasan.so)"
ubsan="$(${CC:-cc} -print-file-name=libubsan.so)"
export LD_PRELOAD="$asan:$ubsan"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export MLI_SHARED="${MLI_SHARED:-$root/../shared}"
python -c "import mli; print('sanitized build:', mli.__file__)"
# tests marked numpy_only run no C: the plain pass has run them
run() { python -m pytest -q -p no:cacheprovider -x -m "not numpy_only" "$@"; }
if [ "$#" -gt 0 ]; then
    run "$@"
    exit
fi
# the whole suite as two processes on the test files taken alternately (a
# sanitized run takes about 10 minutes on one core; CI has two)
mapfile -t files < <(cd "$work" && ls tests/test_*.py | sort)
half=(); rest=()
for i in "${!files[@]}"; do
    if (( i % 2 )); then rest+=("${files[$i]}"); else half+=("${files[$i]}"); fi
done
run "${half[@]}" >"$work/half.log" 2>&1 & p1=$!
run "${rest[@]}" >"$work/rest.log" 2>&1 & p2=$!
r1=0 r2=0
wait "$p1" || r1=$?
wait "$p2" || r2=$?
cat "$work/half.log" "$work/rest.log"
exit $(( r1 != 0 || r2 != 0 ))
