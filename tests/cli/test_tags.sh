#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_tags.sh - ctags finds the definitions of the entry points a
# reader looks up first.  The public headers define macros of the same
# names over inline wrappers; kernel/alloc.c defines the functions with the
# macros undefined, and a parenthesised definition would hide them again.
srcdir=${srcdir:-.}
if ! ctags --version 2>/dev/null | grep -q "Universal Ctags"; then
	echo "skipped: universal-ctags is not installed"
	exit 77
fi
tags=$(ctags -R -x --languages=C --kinds-c=f "$srcdir/kernel") || exit 1
status=0
for f in alloy_alloc alloy_alloc_default alloy_data_ptr_free; do
	if printf '%s\n' "$tags" | awk -v f="$f" '$1 == f { found = 1 }
	    END { exit !found }'; then
		echo "ok: ctags finds the function $f"
	else
		echo "FAIL: ctags finds no definition of the function $f in kernel/"
		status=1
	fi
done
exit $status
