#!/usr/bin/env bash
# Records the trace corpus: real programs, each run under `iolab record` on
# data this script makes (the same bytes every time, from seeded
# generators), so anyone can regenerate the corpus on their machine.
#
#   scripts/record-corpus.sh WORKDIR        (env: IOLAB=path/to/iolab,
#                                            ONLY="grep-tree tar-tree" to record some)
#
# Writes WORKDIR/corpus/NAME.csv for each program and WORKDIR/corpus/MANIFEST.tsv
# (name, half, shape, what maps, what the program does). The data lives in
# WORKDIR/data (about 2.5 GiB; kept, so a second run only records).
#
# Halves: the adaptive policy's rules and thresholds are set on the `train`
# traces only; the `test` traces report how it does on programs it was not
# shaped on; the `holdout` traces were added after the test half had been
# reported and looked into, and are replayed once with a finished policy. Each shape has its program in one half and a different program
# of that shape (or none) in the other; nothing in the policy names a program.
#
# Mapped access: `iolab record` sees read-family system calls, not the page
# faults of a mapping (a mapped file is one `mmap` row, which replay leaves
# out). The programs here read with system calls: SQLite with
# `PRAGMA mmap_size=0`, Python's `dbm.dumb` (dbm.gnu and LMDB map their
# files, so they are not used). What does map is said in the manifest's
# `maps` column (the dynamic loader maps every program's shared libraries;
# the interpreter maps its extension modules).
#
# Needs: strace, sqlite3, python3, gcc, zstd, gzip, pv, tar, grep, find,
# sha256sum, tail (bash scripts/setup.sh --corpus installs the missing ones).
set -euo pipefail
work=${1:?usage: scripts/record-corpus.sh WORKDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
iolab=${IOLAB:-$ROOT/target/release/iolab}
PY=${PYTHON:-/usr/bin/python3}
for p in strace sqlite3 gcc zstd gzip pv tar grep find sha256sum tail "$PY"; do
  command -v "$p" >/dev/null || { echo "record-corpus: $p is missing (bash scripts/setup.sh --corpus)" >&2; exit 2; }
done
[ -x "$iolab" ] || cargo build --release -q -p iolab-cli --manifest-path "$ROOT/Cargo.toml"
mkdir -p "$work/data" "$work/corpus"
work=$(cd "$work" && pwd)
data=$work/data
out=$work/corpus

# --- data -------------------------------------------------------------------
"$PY" - "$data" <<'PY'
import os, random, sys, struct
root = sys.argv[1]

def once(name, make):
    """Makes root/name with make(tmp) unless it exists (atomically)."""
    final = os.path.join(root, name)
    if os.path.exists(final):
        return
    tmp = final + ".tmp"
    if os.path.isdir(tmp):
        import shutil; shutil.rmtree(tmp)
    elif os.path.exists(tmp):
        os.remove(tmp)
    make(tmp)
    os.rename(tmp, final)

WORDS = ("alpha beta gamma delta read write open close buffer page cache file "
         "index table row key value stream block queue device kernel thread").split()

def text(rng, n):
    out, size = [], 0
    while size < n:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + "\n"
        out.append(line); size += len(line)
    return "".join(out)[:n]

def docs(tmp):
    # A documentation tree: 2,400 text files of 1-48 KiB in 48 directories,
    # and two large files (192 and 96 MiB) under media/.
    rng = random.Random(1)
    for i in range(2400):
        d = os.path.join(tmp, "doc", "s%02d" % (i % 48))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "page%04d.txt" % i), "w") as f:
            f.write(text(rng, rng.randint(1 << 10, 48 << 10)))
    os.makedirs(os.path.join(tmp, "media"))
    block = rng.randbytes(1 << 20)
    for name, mib in (("film.bin", 192), ("sound.bin", 96)):
        with open(os.path.join(tmp, "media", name), "wb") as f:
            for k in range(mib):
                f.write(block[k:] + block[:k])

def csrc(tmp):
    # A C source tree: 240 translation units in 12 modules, each including
    # its module's header, a shared header and three system headers.
    rng = random.Random(2)
    inc = os.path.join(tmp, "include")
    os.makedirs(inc)
    with open(os.path.join(inc, "common.h"), "w") as f:
        f.write("#pragma once\n#include <stddef.h>\n")
        for k in range(400):
            f.write("static inline int common_%d(int x) { return x * %d + %d; }\n" % (k, k, rng.randint(0, 99)))
    for m in range(12):
        d = os.path.join(tmp, "mod%02d" % m)
        os.makedirs(d)
        with open(os.path.join(inc, "mod%02d.h" % m), "w") as f:
            f.write("#pragma once\n")
            for k in range(150):
                f.write("int mod%02d_fn%d(int a, const char *b);\n" % (m, k))
                f.write("struct mod%02d_s%d { int a; long b[%d]; };\n" % (m, k, rng.randint(1, 9)))
        for u in range(20):
            with open(os.path.join(d, "unit%02d.c" % u), "w") as f:
                f.write('#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n')
                f.write('#include "common.h"\n#include "mod%02d.h"\n' % m)
                for k in range(rng.randint(40, 160)):
                    f.write("int mod%02d_u%d_f%d(int a) { char b[%d]; memset(b, a, sizeof b); return common_%d(a) + (int)strlen(b); }\n"
                            % (m, u, k, rng.randint(8, 64), rng.randint(0, 399)))

def images(tmp):
    # An image data set: 900 files of 16-640 KiB in 30 class directories.
    rng = random.Random(3)
    for i in range(900):
        d = os.path.join(tmp, "class%02d" % (i % 30))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "img%04d.jpg" % i), "wb") as f:
            f.write(rng.randbytes(rng.randint(16 << 10, 640 << 10)))

def shards(tmp):
    # Training shards: 6 files of 48 MiB of records (8-byte length, body),
    # and an index of every record's offset and length.
    rng = random.Random(4)
    os.makedirs(tmp)
    index = []
    for s in range(6):
        path = os.path.join(tmp, "shard%d.rec" % s)
        with open(path, "wb") as f:
            off = 0
            body = rng.randbytes(1 << 20)
            while off < (48 << 20):
                n = rng.randint(24 << 10, 320 << 10)
                f.write(struct.pack("<Q", n)); f.write(body[:n])
                index.append((s, off, n + 8)); off += n + 8
    with open(os.path.join(tmp, "index.txt"), "w") as f:
        for s, o, n in index:
            f.write("%d %d %d\n" % (s, o, n))

def pkg(tmp):
    # A Python package tree: 8 subpackages of 24 modules each; importing
    # the top package imports all of them.
    rng = random.Random(5)
    top = os.path.join(tmp, "corpuspkg")
    os.makedirs(top)
    subs = []
    for s in range(8):
        d = os.path.join(top, "sub%d" % s)
        os.makedirs(d)
        mods = ["m%02d" % k for k in range(24)]
        with open(os.path.join(d, "__init__.py"), "w") as f:
            f.write("".join("from . import %s\n" % m for m in mods))
        for m in mods:
            with open(os.path.join(d, m + ".py"), "w") as f:
                for k in range(rng.randint(20, 160)):
                    f.write("def f%d(x):\n    return x * %d + %d\n" % (k, k, rng.randint(0, 9)))
                f.write("TABLE = %r\n" % [rng.randint(0, 1 << 20) for _ in range(rng.randint(10, 400))])
        subs.append("sub%d" % s)
    with open(os.path.join(top, "__init__.py"), "w") as f:
        f.write("".join("from . import %s\n" % s for s in subs))

def kv(tmp):
    # A key-value store (Python's dbm.dumb: one data file, one index):
    # 60,000 values of 0.3-3 KiB.
    import dbm.dumb
    rng = random.Random(6)
    os.makedirs(tmp)
    db = dbm.dumb.open(os.path.join(tmp, "store"), "n")
    for i in range(60000):
        db[b"key%06d" % i] = rng.randbytes(rng.randint(300, 3000))
    db.close()

def stream(tmp):
    # A media file: 256 MiB.
    rng = random.Random(7)
    block = rng.randbytes(1 << 20)
    with open(tmp, "wb") as f:
        for k in range(256):
            f.write(block[k:] + block[:k])

for name, make in (("docs", docs), ("csrc", csrc), ("images", images),
                   ("shards", shards), ("pkg", pkg), ("kv", kv), ("stream.bin", stream)):
    once(name, make)
PY

# Two SQLite databases: one of 220 MiB with an index (lookups and a scan),
# and six of 16-40 MiB for queries across attached databases.
if [ ! -f "$data/main.db" ]; then
  rm -f "$data/main.db.tmp"
  sqlite3 "$data/main.db.tmp" "PRAGMA page_size=4096; PRAGMA journal_mode=OFF;
    CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v BLOB);
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 640000)
    INSERT INTO t SELECT x, (x * 7919) % 1000003, zeroblob(200 + (x * 31) % 200) FROM c;
    CREATE INDEX tk ON t(k);" >/dev/null
  mv "$data/main.db.tmp" "$data/main.db"
fi
for i in 0 1 2 3 4 5; do
  db=$data/part$i.db
  [ -f "$db" ] && continue
  rows=$(( (i + 2) * 20000 ))
  rm -f "$db.tmp"
  sqlite3 "$db.tmp" "PRAGMA page_size=4096; PRAGMA journal_mode=OFF;
    CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v BLOB);
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT $rows)
    INSERT INTO t SELECT x, (x * 104729 + $i) % 200003, zeroblob(300 + (x * 17) % 700) FROM c;
    CREATE INDEX tk ON t(k);" >/dev/null
  mv "$db.tmp" "$db"
done
# The package's byte code, written once whatever PYTHONDONTWRITEBYTECODE says
# (an import then reads the .pyc files, as an installed package's are).
"$PY" -m compileall -q "$data/pkg" >/dev/null

# --- the programs -------------------------------------------------------------
manifest=$out/MANIFEST.tsv.tmp
printf 'name\thalf\tshape\tmaps\twhat\n' > "$manifest"
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
rec() { # NAME HALF SHAPE MAPS WHAT -- PROGRAM...
  local name=$1 half=$2 shape=$3 maps=$4 what=$5
  shift 6
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$half" "$shape" "$maps" "$what" >> "$manifest"
  want "$name" || return 0
  echo "record-corpus: $name" >&2
  (cd "$data" && "$iolab" record -o "$out/$name.csv" --overwrite -- "$@" >/dev/null)
}
lookups() { # N SEED: SQL point lookups by the indexed column
  "$PY" -c "import random; r = random.Random($2)
print('PRAGMA mmap_size=0; PRAGMA cache_size=-2000;')
for _ in range($1): print('SELECT length(v) FROM t WHERE k = %d;' % r.randrange(1000003))"
}
lookups 2500 11 > "$data/lookups.sql"
"$PY" -c "import random; r = random.Random(12)
print('PRAGMA mmap_size=0; PRAGMA cache_size=-2000;')
for i in range(6): print(\"ATTACH 'part%d.db' AS p%d;\" % (i, i))
for _ in range(700):
    i = r.randrange(6); j = (i + 1 + r.randrange(5)) % 6
    print('SELECT count(*) FROM p%d.t a JOIN p%d.t b ON b.id = a.id WHERE a.k = %d;' % (i, j, r.randrange(200003)))" > "$data/multi.sql"
rec sqlite-index train db-lookups "no (mmap_size=0)" \
  "sqlite3: 2,500 point lookups through an index of a 220 MiB database" -- \
  sh -c 'sqlite3 main.db < lookups.sql'
rec sqlite-scan train db-scan "no (mmap_size=0)" \
  "sqlite3: a full scan of a 220 MiB table without an index" -- \
  sqlite3 main.db "PRAGMA mmap_size=0; SELECT count(*), sum(length(v)) FROM t WHERE v > x'01';"
rec sqlite-multi test db-lookups "no (mmap_size=0)" \
  "sqlite3: 700 joins of lookups across six attached databases (16-40 MiB)" -- \
  sh -c 'sqlite3 part0.db < multi.sql'
rec dbm-lookups test key-value "no" \
  "python3 dbm.dumb: 3,000 lookups of random keys in a 100 MiB store" -- \
  "$PY" -c "import dbm.dumb, random
db = dbm.dumb.open('kv/store', 'r'); r = random.Random(13)
print(sum(len(db[b'key%06d' % r.randrange(60000)]) for _ in range(3000)))"
rec grep-tree train tree-walk "no" \
  "grep -r over 2,400 text files (50 MiB) and two large ones" -- \
  grep -r -c zzqqxyz docs
rec find-cat test tree-walk "no" \
  "find -exec cat over a C source tree (253 files)" -- \
  sh -c 'find csrc -type f -exec cat {} + >/dev/null'
rec gcc-syntax test compiler "gcc and cc1 binaries (loader)" \
  "gcc -fsyntax-only over 120 C files and their headers" -- \
  sh -c 'gcc -fsyntax-only -Icsrc/include csrc/mod0[0-5]/*.c'
rec tar-tree train archiver "no" \
  "tar c of the text tree and its two large files, to a pipe" -- \
  sh -c 'tar --sort=name -cf - docs | cat >/dev/null'
rec zstd-big test archiver "no" \
  "zstd -1 of a 256 MiB file" -- \
  sh -c 'zstd -q -1 -c stream.bin >/dev/null'
rec loader-files train data-loader "no" \
  "python3: 900 image files (16-640 KiB) read whole in shuffled order" -- \
  "$PY" -c "import os, random
paths = sorted(os.path.join(d, f) for d, _, fs in os.walk('images') for f in fs)
random.Random(14).shuffle(paths)
print(sum(len(open(p, 'rb').read()) for p in paths))"
rec loader-shards test data-loader "no" \
  "python3: 700 records (24-320 KiB) read from six 48 MiB shards in shuffled order" -- \
  "$PY" -c "import random
idx = [tuple(map(int, l.split())) for l in open('shards/index.txt')]
random.Random(15).shuffle(idx)
fs = [open('shards/shard%d.rec' % s, 'rb') for s in range(6)]
n = 0
for s, off, ln in idx[:700]:
    fs[s].seek(off); n += len(fs[s].read(ln))
print(n)"
rec python-stdlib train interpreter "extension modules (.so)" \
  "python3 start-up importing 20 standard-library packages" -- \
  "$PY" -c "import json, csv, decimal, email.parser, http.client, xml.dom.minidom, asyncio, unittest, sqlite3, argparse, logging, tarfile, zipfile, difflib, pydoc, statistics, fractions, ipaddress, uuid, gettext"
rec python-pkg test interpreter "extension modules (.so)" \
  "python3 importing a package tree of 200 modules" -- \
  "$PY" -c "import sys; sys.path.insert(0, 'pkg'); import corpuspkg"
rec pv-stream train media "no" \
  "pv -L 512m: a 256 MiB file read in order at a paced rate" -- \
  sh -c 'pv -q -C -L 512m stream.bin >/dev/null'
rec mixed-a train mixed "no (mmap_size=0)" \
  "sqlite3 lookups beside tar of the text tree (two processes at once)" -- \
  sh -c 'sqlite3 main.db < lookups.sql >/dev/null & tar --sort=name -cf - docs/doc | cat >/dev/null; wait'
rec mixed-b test mixed "no" \
  "grep -r over the C tree beside the shard loader (two processes at once)" -- \
  sh -c "grep -r -c zzqqxyz csrc >/dev/null & $PY -c \"import random
idx = [tuple(map(int, l.split())) for l in open('shards/index.txt')]
random.Random(16).shuffle(idx)
fs = [open('shards/shard%d.rec' % s, 'rb') for s in range(6)]
for s, off, ln in idx[:400]:
    fs[s].seek(off); fs[s].read(ln)\"; wait"
# The holdout: programs kept out of both halves while the policy was
# worked on, replayed once with the finished binary (HALF=holdout).
"$PY" -c "import random; r = random.Random(17)
print('PRAGMA mmap_size=0; PRAGMA cache_size=-2000;')
for _ in range(60):
    a = r.randrange(1000003 - 400); print('SELECT sum(length(v)) FROM t WHERE k BETWEEN %d AND %d;' % (a, a + 400))" > "$data/ranges.sql"
rec sqlite-range holdout db-ranges "no (mmap_size=0)" \
  "sqlite3: 60 range queries through an index (about 250 rows each, scattered in the table)" -- \
  sh -c 'sqlite3 main.db < ranges.sql'
rec hash-images holdout checksum "no" \
  "sha256sum over the 900 image files, in name order" -- \
  sh -c 'find images -type f | sort | xargs sha256sum >/dev/null'
rec gzip-film holdout archiver "no" \
  "gzip -1 of a 192 MiB file" -- \
  sh -c 'gzip -1 -c docs/media/film.bin >/dev/null'
rec record-walk holdout index-rebuild "no" \
  "python3: walks every record header of three 48 MiB shards (read 8 bytes, seek past the body)" -- \
  "$PY" -c "import struct
n = 0
for s in range(3):
    with open('shards/shard%d.rec' % s, 'rb') as f:
        while True:
            h = f.read(8)
            if len(h) < 8:
                break
            f.seek(struct.unpack('<Q', h)[0], 1); n += 1
print(n)"
rec tail-tree holdout log-tail "no" \
  "tail -n 3 of 500 text files (each read from its end)" -- \
  sh -c 'tail -q -n 3 docs/doc/s0[0-9]/*.txt >/dev/null'
mv "$manifest" "$out/MANIFEST.tsv"
echo "record-corpus: $(($(wc -l < "$out/MANIFEST.tsv") - 1)) programs; traces and manifest in $out" >&2
