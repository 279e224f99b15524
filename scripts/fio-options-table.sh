#!/usr/bin/env bash
# Rewrites the fenced option table of a page (default docs/fio-options.md)
# with `iolab fio --list-options`: what iolab does with each option fio
# documents. The test `docs_fio_options_md_is_what_list_options_prints`
# checks the page against the binary.
#
# usage: scripts/fio-options-table.sh [PAGE.md]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
page=${1:-$here/docs/fio-options.md}
(cd "$here" && cargo build --quiet -p iolab-cli)
table=$("$here/target/debug/iolab" fio --list-options)
python3 - "$page" "$table" <<'PY'
import sys
page, table = sys.argv[1], sys.argv[2]
text = open(page).read()
head, rest = text.split("```\n", 1)
_, tail = rest.split("```", 1)
open(page, "w").write(head + "```\n" + table + "\n```" + tail)
PY
echo "rewrote the table of $page"
