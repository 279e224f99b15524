# Sourced by vs-t-io_uring.sh and per-op-profile.sh: builds the two tools
# they compare and makes the data file both read.
#   in:  $src (a fio source tree), $work (a scratch folder), $here (the
#        repository), $file (the data file's path), $size, $me (for errors)
#   out: $tio (t/io_uring: $src's own when it is built already, else one
#        built in $work) and $iolab (a release build); $file holds $size.
tio_tools() {
  tio=$src/t/io_uring
  if [ ! -x "$tio" ]; then
    echo "building t/io_uring from $src in $work ..." >&2
    cp -a "$src" "$work/fio"
    (cd "$work/fio" && ./configure && make -j"$(nproc)" t/io_uring) >"$work/build.log" 2>&1 \
      || { echo "$me: t/io_uring did not build; see $work/build.log" >&2; trap - EXIT; exit 1; }
    tio=$work/fio/t/io_uring
  fi
  echo "building iolab ..." >&2
  (cd "$here" && cargo build --release --quiet -p iolab-cli)
  iolab=$here/target/release/iolab
  rm -f "$file"
  "$iolab" bench --file "$file" --size "$size" --ops 1 >/dev/null
}
