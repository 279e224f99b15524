#!/usr/bin/env python3
"""A fio job file shrunk to run in a few seconds on a small local file:
sizes (size, filesize, io_size) at most SIZE, runtime at most TIME seconds
(added where a job has none), loops at most 2, numjobs at most 4,
startdelay and ramp_time at most 1 s, devices and absolute paths turned
into local file names, `directory` dropped. Everything else is left as
written (comments too), so both tools read the same job.

usage: fio-shrink.py JOB.fio SIZE TIME > SHRUNK.fio
"""
import re
import sys

UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "z": 256 << 20}


def size_of(v):
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtz]?)(i?b)?\s*", v.lower())
    return int(m.group(1)) * UNITS[m.group(2)] if m else None


def secs_of(v):
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|h)?\s*", v.lower())
    if not m:
        return None
    mult = {None: 1, "s": 1, "ms": 0.001, "m": 60, "h": 3600}[m.group(2)]
    return int(m.group(1)) * mult


def local(name):
    """A device or absolute path as a file in the current folder."""
    parts = [p for p in name.split(":") if p]
    return ":".join(re.sub(r"[^A-Za-z0-9_.-]", "_", p.strip("/")) or "data" for p in parts)


def shrink(text, cap, tmax):
    out, has_size, has_runtime = [], False, False
    for line in text.splitlines():
        body = line.split(";")[0].split("#")[0]
        key, _, val = body.partition("=")
        key = key.strip().lower()
        if key in ("size", "filesize", "io_size", "io_limit") and val:
            b = size_of(val)
            has_size = has_size or key in ("size", "filesize")
            if b is not None and b > cap:
                line = f"{key}={cap}"
        elif key in ("runtime", "timeout") and val:
            has_runtime = True
            s = secs_of(val)
            if s is None or s > tmax:
                line = f"{key}={tmax}"
        elif key in ("startdelay", "ramp_time") and val:
            s = secs_of(val)
            if s is None or s > 1:
                line = f"{key}=1"
        elif key == "loops" and val.strip().isdigit() and int(val) > 2:
            line = "loops=2"
        elif key == "numjobs" and val.strip().isdigit() and int(val) > 4:
            line = "numjobs=4"
        elif key == "filename" and val.strip().startswith("/"):
            line = f"filename={local(val.strip())}"
        elif key == "directory":
            line = "; " + line
        out.append(line)
    # A job with no size and no runtime gets both, in [global] (fio and
    # iolab read it the same way).
    extra = []
    if not has_size:
        extra.append(f"size={cap}")
    if not has_runtime:
        extra.append(f"runtime={tmax}")
    return "[global]\n" + "\n".join(extra) + "\n" + "\n".join(out) + "\n"


if __name__ == "__main__":
    job, size, tmax = sys.argv[1], size_of(sys.argv[2]), int(sys.argv[3])
    sys.stdout.write(shrink(open(job).read(), size, tmax))
