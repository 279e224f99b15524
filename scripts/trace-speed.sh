#!/usr/bin/env bash
# Records five real programs with `iolab record` and replays each trace
# against every reader (cold cache, as fast as possible, REPEAT rounds in
# rotating order). Usage: scripts/trace-speed.sh WORKDIR [REPEAT]
# (env TRACES="sqlite grep python loader tar" picks the programs recorded and replayed; Auto uses the
# profile `iolab tune` wrote, or IOLAB_PROFILE's, else the built-in one).
# Needs strace and sqlite3 (scripts/setup.sh installs both). Results: WORKDIR/replay.jsonl and the tables.
set -euo pipefail
work=${1:?usage: scripts/trace-speed.sh WORKDIR [REPEAT]}
repeat=${2:-5}
iolab=${IOLAB:-$(cd "$(dirname "$0")/.." && pwd)/target/release/iolab}
mkdir -p "$work"
cd "$work"
traces=${TRACES:-sqlite grep python loader tar}
want() { [[ " $traces " == *" $1 "* ]]; }
# 1. SQLite: an indexed range query (random page reads) and a full scan.
if want sqlite; then
if [ ! -f db.sqlite ]; then
  sqlite3 db.sqlite "PRAGMA journal_mode=OFF; CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v BLOB);
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 800000)
    INSERT INTO t SELECT x, abs(random())%1000000, randomblob(300) FROM c; CREATE INDEX tk ON t(k);" >/dev/null
fi
"$iolab" record -o sqlite.csv --overwrite -- sqlite3 db.sqlite \
  "SELECT count(*), sum(length(v)) FROM t WHERE k BETWEEN 1000 AND 40000; SELECT sum(length(v)) FROM t WHERE id % 97 = 0;" >/dev/null
fi
# 2. A recursive grep over a source tree (the cargo registry, or /usr/share).
tree=${TREE:-$HOME/.cargo/registry/src}
[ -d "$tree" ] || tree=/usr/share
if want grep; then
  "$iolab" record -o grep.csv --overwrite -- grep -r -l zzqqxyz "$tree" >/dev/null || true
fi
# 3. An interpreter importing part of its standard library.
if want python; then
  "$iolab" record -o python.csv --overwrite -- python3 -c \
    "import json, csv, decimal, email.parser, http.client, xml.dom.minidom, asyncio, unittest, sqlite3, argparse, logging, tarfile, zipfile, difflib, pydoc"
fi
# 4. An ML data loader: an interpreter that imports what it needs, then
#    reads each file of a dataset whole (numpy.load and most loaders read a
#    file in one call), as a training job's first epoch does.
if want loader; then
if [ ! -d dataset ]; then
  mkdir -p dataset.tmp
  for i in 0 1 2 3 4 5; do head -c $((96 << 20)) /dev/urandom > "dataset.tmp/shard$i.bin"; done
  mv dataset.tmp dataset
fi
"$iolab" record -o loader.csv --overwrite -- python3 -c \
  "import json, csv, hashlib, pathlib, struct, zipfile, argparse, logging
n = 0
for p in sorted(pathlib.Path('dataset').glob('shard*.bin')):
    with open(p, 'rb') as f:
        n += len(f.read())
print(n)" >/dev/null
fi
# 5. A backup: GNU tar archiving a tree that mixes 3,000 small files
#    (4-64 KiB, a source tree) with two large ones (512 and 256 MiB), read
#    in tar's 10 KiB records. The tree is made here, the same every time
#    (sizes and bytes from a seeded generator: 870 MiB), and removed after
#    recording unless KEEP_TREE=1 (the replay makes its own copies).
if want tar && [ ! -f tar.csv ]; then
  [ -d tree ] || python3 - tree <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(10)
tmp = root + ".tmp"
os.makedirs(tmp, exist_ok=True)
for i in range(3000):
    d = os.path.join(tmp, "src", "d%02d" % (i % 40))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d.c" % i), "wb") as f:
        f.write(rng.randbytes(rng.randint(4 << 10, 64 << 10)))
os.makedirs(os.path.join(tmp, "data"), exist_ok=True)
block = rng.randbytes(1 << 20)
for name, mib in (("big0.bin", 512), ("big1.bin", 256)):
    with open(os.path.join(tmp, "data", name), "wb") as f:
        for k in range(mib):
            f.write(block[k % 4096:] + block[:k % 4096])
os.rename(tmp, root)
PY
  sync
  echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  # A pipe, not `-f /dev/null`: GNU tar does not read the files then.
  "$iolab" record -o tar.csv --overwrite -- sh -c 'tar --sort=name -cf - tree | cat >/dev/null'
  [ "${KEEP_TREE:-0}" = 1 ] || rm -rf tree
fi
for t in $traces; do
  mkdir -p "files-$t"
  "$iolab" replay "$t.csv" --dir "files-$t" --cache cold --timing asap \
    --repeat "$repeat" --jsonl replay.jsonl
done
