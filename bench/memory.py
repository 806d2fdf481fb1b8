"""Resident memory by process: RSS and PSS from /proc, and where it lies.

The memory twin of bench/cpu.py, for the idle-footprint bench
(scripts/bench-memory.sh, make bench-memory). Each reading takes, for each
ROLE=PID given:

- RSS and PSS from /proc/PID/smaps_rollup (PSS shares each page among the
  processes that map it: the binary's code mapped by both the controlplane
  and the worker counts half to each), and RSS split into anonymous and
  file-backed pages;
- the thread count (/proc/PID/status);
- RSS by kind of mapping from /proc/PID/smaps: the binary's code (its
  executable mappings) and its data (read-only data, relocated read-only
  data and writable statics), shared libraries, the main heap (brk), glibc malloc
  arenas (the other threads' heaps: an anonymous read-write mapping whose
  reserved tail, mapped PROT_NONE, makes it 64 MiB in all), thread stacks
  (an anonymous mapping right after a one-page PROT_NONE guard), and other
  anonymous memory (large allocations malloc maps on their own, sqlite's
  page cache, ...). The arena and stack kinds are told by these shapes, a
  heuristic: a mapping of another origin with the same shape is counted
  with them.

Megabytes are 10^6 bytes, as in the goal they are compared with.

    python3 bench/memory.py record FILE LABEL ROLE=PID...   # append a reading
    python3 bench/memory.py table FILE [--goal-mb 50]       # print the tables
"""

import argparse
import json
import os
import sys

KINDS = ("binary code", "binary data", "libraries", "heap", "arenas", "stacks", "other anon")
ARENA_BYTES = 64 * 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")


def _kb_fields(text):
    """{field: bytes} of the 'Name:  123 kB' lines of a /proc file."""
    fields = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB":
            fields[name] = int(parts[0]) * 1024
        elif len(parts) == 1 and parts[0].isdigit():
            fields[name] = int(parts[0])
    return fields


def _read(path):
    with open(path) as f:
        return f.read()


def _mappings(pid):
    """[(start, end, perms, path, {field: bytes})] of /proc/PID/smaps."""
    maps, current = [], None
    for line in _read(f"/proc/{pid}/smaps").splitlines():
        head = line.split(None, 5)
        if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            start, end = (int(x, 16) for x in head[0].split("-"))
            current = (start, end, head[1], head[5] if len(head) > 5 else "", {})
            maps.append(current)
        elif current is not None:
            current[4].update(_kb_fields(line))
    return maps


def by_kind(pid):
    """RSS in bytes by kind of mapping (see the module's docs), and the
    three anonymous mappings with the most RSS as (kind, size, rss)."""
    exe = os.path.realpath(f"/proc/{pid}/exe")
    maps = _mappings(pid)
    kinds = dict.fromkeys(KINDS, 0)
    anon = []
    for i, (start, end, perms, path, fields) in enumerate(maps):
        rss = fields.get("Rss", 0)
        if path == exe:
            kind = "binary code" if "x" in perms else "binary data"
        elif path.startswith("/"):
            kind = "libraries"
        elif path == "[heap]":
            kind = "heap"
        elif path:  # [stack], [vdso], [vvar], ...
            kind = "stacks" if path == "[stack]" else "libraries"
        else:
            before = maps[i - 1] if i > 0 else None
            after = maps[i + 1] if i + 1 < len(maps) else None
            if (
                after
                and after[0] == end
                and after[2].startswith("---")
                and not after[3]
                and after[1] - start == ARENA_BYTES
            ):
                kind = "arenas"
            elif start % ARENA_BYTES == 0 and end - start == ARENA_BYTES and perms.startswith("rw"):
                kind = "arenas"  # an arena grown to its whole reservation
            elif before and before[1] == start and before[2].startswith("---") and before[1] - before[0] == PAGE:
                kind = "stacks"
            else:
                kind = "other anon"
            anon.append((kind, end - start, rss))
        kinds[kind] += rss
    return kinds, sorted(anon, key=lambda m: -m[2])[:3]


def reading(pid):
    rollup = _kb_fields(_read(f"/proc/{pid}/smaps_rollup"))
    status = _kb_fields(_read(f"/proc/{pid}/status"))
    kinds, largest = by_kind(pid)
    return {
        "pid": pid,
        "rss": rollup.get("Rss", 0),
        "pss": rollup.get("Pss", 0),
        "anon": status.get("RssAnon", 0),
        "file": status.get("RssFile", 0) + status.get("RssShmem", 0),
        "threads": status.get("Threads", 0),
        "kinds": kinds,
        "largest anon": largest,
    }


def record(path, label, roles):
    entry = {"label": label, "processes": {}}
    for item in roles:
        role, _, pid = item.partition("=")
        entry["processes"][role] = reading(int(pid))
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def mb(value):
    return f"{value / 1e6:.1f}"


def table(path, goal_mb, out=sys.stdout):
    with open(path) as f:
        entries = [json.loads(line) for line in f if line.strip()]
    print("| state | process | RSS MB | PSS MB | anon MB | file MB | threads |", file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for entry in entries:
        procs = entry["processes"]
        for role, r in procs.items():
            row = (mb(r["rss"]), mb(r["pss"]), mb(r["anon"]), mb(r["file"]), str(r["threads"]))
            print(f"| {entry['label']} | {role} | " + " | ".join(row) + " |", file=out)
        rss = sum(r["rss"] for r in procs.values())
        pss = sum(r["pss"] for r in procs.values())
        verdict = "met" if rss <= goal_mb * 1e6 else "not met"
        print(
            f"| {entry['label']} | **sum** | **{mb(rss)}** | **{mb(pss)}** | "
            f"{mb(sum(r['anon'] for r in procs.values()))} | {mb(sum(r['file'] for r in procs.values()))} | "
            f"goal ≤ {goal_mb} MB RSS: {verdict} |",
            file=out,
        )
    print(file=out)
    print("RSS MB by kind of mapping (/proc/PID/smaps; see bench/memory.py):", file=out)
    print(file=out)
    print("| state | process | " + " | ".join(KINDS) + " |", file=out)
    print("|---|---|" + "---|" * len(KINDS), file=out)
    for entry in entries:
        for role, r in entry["processes"].items():
            print(f"| {entry['label']} | {role} | " + " | ".join(mb(r["kinds"][k]) for k in KINDS) + " |", file=out)
    print(file=out)
    print("Largest anonymous mappings by RSS (kind: size MB / RSS MB):", file=out)
    print(file=out)
    for entry in entries:
        for role, r in entry["processes"].items():
            maps = ", ".join(f"{kind}: {mb(size)} / {mb(rss)}" for kind, size, rss in r["largest anon"])
            print(f"- {entry['label']}, {role}: {maps}", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="append a reading of the processes given to FILE")
    rec.add_argument("file")
    rec.add_argument("label")
    rec.add_argument("roles", nargs="+", metavar="ROLE=PID")
    tab = sub.add_parser("table", help="print FILE's readings")
    tab.add_argument("file")
    tab.add_argument("--goal-mb", type=float, default=50)
    args = parser.parse_args()
    if args.command == "record":
        record(args.file, args.label, args.roles)
    else:
        table(args.file, args.goal_mb)


if __name__ == "__main__":
    main()
