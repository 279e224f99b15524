#!/usr/bin/env bash
# IOR against iolab on the same layouts, alternating, on this host.
#
#   scripts/vs-ior.sh IOR_SOURCE_DIR [DIR] [RANKS...]
#
# IOR_SOURCE_DIR is a copy of the hpc/ior repository that you provide (IOR is
# not a Debian package). It is built in a temporary folder (./bootstrap,
# ./configure, make; needs autoconf, automake, libtool and Open MPI, which
# scripts/setup.sh installs); iolab is built with `--features mpi`. For each
# rank count (default 2 4) and layout (file per process; one shared file,
# segmented) it runs, REPEAT times (default 3) and alternating who goes
# first: IOR `-w -e -E` then `-r -C -Q 1` (read what the next rank wrote),
# and iolab `--op write --fsync-on-close` then `--reorder` reads, cold and
# warm. Like for like: each side first makes its files untimed, caches are
# dropped, and the timed write overwrites them in place (IOR's -E; iolab
# always writes into its made files); 1 MiB transfers, the same bytes per
# rank. Windows: IOR's runs from the first open to the last close, iolab's
# from the first op to the last completion (and fsync); both divide all
# ranks' bytes by latest end − earliest start, in MiB/s.
# It prints each figure's median and the iolab/IOR ratios, and how resident
# each side's "read" data was (fincore before IOR's read; iolab's own record).
# Environment: BLOCK (per-rank bytes, default 512m), REPEAT.
set -euo pipefail
src=${1:?usage: scripts/vs-ior.sh IOR_SOURCE_DIR [DIR] [RANKS...]}
dir=${2:-.}
shift $(( $# >= 2 ? 2 : 1 ))
ranks=("${@:-2 4}")
[ ${#ranks[@]} -eq 1 ] && read -r -a ranks <<<"${ranks[0]}"
block=${BLOCK:-512m}
repeat=${REPEAT:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$src/configure.ac" ] || { echo "vs-ior: $src is not an IOR source tree (no configure.ac)" >&2; exit 2; }
[ -d "$dir" ] || { echo "vs-ior: $dir: no such directory" >&2; exit 2; }
for t in mpirun autoconf automake libtoolize fincore python3; do
  command -v $t >/dev/null || { echo "vs-ior: $t missing (Debian: scripts/setup.sh; apt-get install autoconf automake libtool)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
work=$(mktemp -d /tmp/vs-ior.XXXXXX)
data=$(mktemp -d "$dir/.vs-ior.XXXXXX")
trap 'rm -rf "$work" "$data"' EXIT
echo "building IOR from $src in $work ..." >&2
cp -a "$src" "$work/ior"
(cd "$work/ior" && ./bootstrap && ./configure && make -j"$(nproc)") >"$work/build.log" 2>&1 \
  || { echo "vs-ior: IOR did not build; see $work/build.log" >&2; trap - EXIT; exit 1; }
ior=$work/ior/src/ior
echo "building iolab with MPI ..." >&2
(cd "$root" && cargo build --release --features mpi -q)
iolab=$root/target/release/iolab
# More ranks than CPUs: bind them round-robin to cores (both tools alike).
# Unbound, the scheduler balanced 4 ranks on 2 cores badly in short windows:
# iolab's warm 4-rank read of 256 MiB each swung 11.0-16.3 GB/s unbound and
# held 16.0-17.0 GB/s bound (6 runs each, same session).
mp() {
  local bind=()
  [ "$1" -gt "$(nproc)" ] && bind=(--bind-to core:overload-allowed)
  mpirun --oversubscribe "${bind[@]}" -n "$1" "${@:2}"
}
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
resident() { fincore --bytes --noheadings --output RES "$@" | awk '{s+=$1} END {print s+0}'; }
bytes() { python3 -c "import sys; u={'k':1<<10,'m':1<<20,'g':1<<30}; v=sys.argv[1].lower(); print(int(v[:-1])*u[v[-1]] if v[-1] in u else int(v))" "$1"; }
per=$(bytes "$block")
out=$work/results.tsv
: >"$out"
for n in "${ranks[@]}"; do
  for layout in per-rank segmented; do
    if [ $layout = per-rank ]; then F=-F; f=$data/ior.dat; g="$data/iolab.dat.{rank}"; else F=; f=$data/ior.dat; g=$data/iolab.dat; fi
    for r in $(seq "$repeat"); do
      for side in $([ $((r % 2)) = 1 ] && echo "ior iolab" || echo "iolab ior"); do
        if [ $side = ior ]; then
          # Untimed: make the files, so that the timed write overwrites
          # them in place (-E), as iolab's does; then nothing cached.
          mp "$n" "$ior" -a POSIX -t 1m -b "$block" -s 1 -w -k $F -o "$f" >/dev/null
          drop
          w=$(mp "$n" "$ior" -a POSIX -t 1m -b "$block" -s 1 -w -e -E -k $F -o "$f" | awk '$1=="write" && $2+0>0 {print $2; exit}')
          res=$(resident "$data"/ior.dat*)
          rd=$(mp "$n" "$ior" -a POSIX -t 1m -b "$block" -s 1 -r -C -Q 1 -k $F -o "$f" | awk '$1=="read" && $2+0>0 {print $2; exit}')
          tot=$((per * n))
          printf '%s\t%s\tior\twrite\t%s\t\n%s\t%s\tior\tread\t%s\t%s\n' "$n" $layout "$w" "$n" $layout "$rd" \
            "$(python3 -c "print(min(1.0, $res / $tot))")" >>"$out"
        else
          common=(--layout $layout --file "$g" --region "$block" --bs 1m --json --overwrite)
          # Untimed: iolab makes its files (the verifiable pattern).
          mp "$n" "$iolab" bench "${common[@]}" --op read --cache as-is >/dev/null
          drop
          # --write-fill once: each buffer filled once, as IOR fills its own.
          j=$(mp "$n" "$iolab" bench "${common[@]}" --op write --write-fill once --fsync-on-close --cache as-is)
          printf '%s\t%s\tiolab\twrite\t%s\t\n' "$n" $layout "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["aggregate"]["mib_per_s"])' "$j")" >>"$out"
          for c in cold warm; do
            j=$(mp "$n" "$iolab" bench "${common[@]}" --op read --reorder --cache $c)
            python3 -c 'import json,sys; a=json.loads(sys.argv[1])["aggregate"]; print("\t".join([sys.argv[2], sys.argv[3], "iolab", "read-" + sys.argv[4], str(a["mib_per_s"]), str(a["max_resident_before"])]))' "$j" "$n" $layout $c >>"$out"
          done
        fi
        rm -f "$data"/ior.dat* "$data"/iolab.dat*
      done
    done
  done
done
echo "raw rows (ranks, layout, tool, figure, MiB/s, residency):" >&2
cat "$out" >&2
python3 - "$out" <<'EOF'
import sys, statistics as st, collections
rows = collections.defaultdict(list)
res = collections.defaultdict(list)
for line in open(sys.argv[1]):
    n, layout, tool, what, mib, r = line.rstrip("\n").split("\t")
    rows[(n, layout, tool, what)].append(float(mib))
    if r:
        res[(n, layout, tool, what)].append(float(r))
med = {k: st.median(v) for k, v in rows.items()}
print(f"{'ranks':>5} {'layout':>9} {'figure':<14} {'IOR MiB/s':>10} {'iolab MiB/s':>12} {'ratio':>6}  residency of the read data before it")
for n, layout in sorted({(k[0], k[1]) for k in med}):
    def m(tool, what): return med.get((n, layout, tool, what), float("nan"))
    def r(tool, what): return st.median(res.get((n, layout, tool, what), [float("nan")]))
    print(f"{n:>5} {layout:>9} {'write':<14} {m('ior','write'):>10.0f} {m('iolab','write'):>12.0f} {m('iolab','write')/m('ior','write'):>6.2f}")
    for c in ("cold", "warm"):
        print(f"{n:>5} {layout:>9} {'read ('+c+')':<14} {m('ior','read'):>10.0f} {m('iolab','read-'+c):>12.0f} {m('iolab','read-'+c)/m('ior','read'):>6.2f}"
              f"  IOR {r('ior','read')*100:.0f} %, iolab {r('iolab','read-'+c)*100:.0f} %")
print(f"medians of {len(next(iter(rows.values())))} alternating repeats; IOR's read is what its -r -C saw (page cache included)")
EOF
