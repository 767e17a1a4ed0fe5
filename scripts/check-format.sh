#!/usr/bin/env bash
# Whether the C sources are formatted as .clang-format says: a check CI
# runs (scripts/test.sh --ci), so that formatting never comes up in review.
#   bash scripts/check-format.sh                every tracked *.c, *.h, *.cc
#   bash scripts/check-format.sh FILE...        just those files
#   bash scripts/check-format.sh --changed BASE the C sources changed since
#                                               git revision BASE
# Prints each file that differs and the command that fixes it; exits 1 if
# any differs.  Without clang-format it says so and exits 0, so that a
# developer machine without it still builds and tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
	echo "check-format: skipped: clang-format is not installed"
	exit 0
fi
files=()
if [ "${1:-}" = "--changed" ]; then
	[ $# -eq 2 ] || { echo "usage: $0 [--changed BASE | FILE...]" >&2; exit 2; }
	cd "$root"
	# Added, copied, modified or renamed: a deleted file has nothing to check.
	mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$2" -- \
		'*.c' '*.h' '*.cc')
elif [ $# -gt 0 ]; then
	# As given, from the caller's folder: clang-format finds .clang-format
	# from each file's own.
	files=("$@")
else
	cd "$root"
	mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cc')
fi
bad=()
for f in "${files[@]}"; do
	[ -f "$f" ] || { echo "check-format: no such file: $f" >&2; exit 2; }
	"$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
	echo "check-format: ${#bad[@]} of ${#files[@]} files differ from .clang-format:"
	for f in "${bad[@]}"; do
		echo "  $f    (fix: clang-format -i $f)"
	done
	echo "check-format: run clang-format -i on each, or wrap a block whose"
	echo "  layout carries meaning in /* clang-format off */ ... /* clang-format on */"
	exit 1
fi
echo "check-format: ${#files[@]} files formatted as .clang-format says"
