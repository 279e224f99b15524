#!/usr/bin/env bash
# Records three real programs with `iolab record` and replays each trace
# against every reader (cold cache, as fast as possible, REPEAT rounds in
# rotating order). Usage: scripts/trace-speed.sh WORKDIR [REPEAT]
# Needs strace and sqlite3 (scripts/setup.sh installs both). Results: WORKDIR/replay.jsonl and the tables.
set -euo pipefail
work=${1:?usage: scripts/trace-speed.sh WORKDIR [REPEAT]}
repeat=${2:-5}
iolab=${IOLAB:-$(cd "$(dirname "$0")/.." && pwd)/target/release/iolab}
mkdir -p "$work"
cd "$work"
# 1. SQLite: an indexed range query (random page reads) and a full scan.
if [ ! -f db.sqlite ]; then
  sqlite3 db.sqlite "PRAGMA journal_mode=OFF; CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v BLOB);
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 800000)
    INSERT INTO t SELECT x, abs(random())%1000000, randomblob(300) FROM c; CREATE INDEX tk ON t(k);"
fi
"$iolab" record -o sqlite.csv --overwrite -- sqlite3 db.sqlite \
  "SELECT count(*), sum(length(v)) FROM t WHERE k BETWEEN 1000 AND 40000; SELECT sum(length(v)) FROM t WHERE id % 97 = 0;" >/dev/null
# 2. A recursive grep over a source tree (the cargo registry, or /usr/share).
tree=${TREE:-$HOME/.cargo/registry/src}
[ -d "$tree" ] || tree=/usr/share
"$iolab" record -o grep.csv --overwrite -- grep -r -l zzqqxyz "$tree" >/dev/null || true
# 3. An interpreter importing part of its standard library.
"$iolab" record -o python.csv --overwrite -- python3 -c \
  "import json, csv, decimal, email.parser, http.client, xml.dom.minidom, asyncio, unittest, sqlite3, argparse, logging, tarfile, zipfile, difflib, pydoc"
for t in sqlite grep python; do
  mkdir -p "files-$t"
  "$iolab" replay "$t.csv" --dir "files-$t" --cache cold --timing asap \
    --repeat "$repeat" --jsonl replay.jsonl
done
