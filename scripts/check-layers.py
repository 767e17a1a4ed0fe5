#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that alloy's folders depend only downward.

    scripts/check-layers.py [--build DIR] [--write-doc]

The graph between the folders of the library and the programs built on
it has two kinds of edges:

  include  a file includes another folder's private header ("kernel/x.h",
           or "x.h" beside it), read from the sources;
  call     an object file uses a symbol that another folder's object
           defines, read with nm from the build directory (so calls
           through the public headers count too).

LAYERS below is the rule: a folder may use folders on lower lines only.
Folders on one line are peers and may not use each other.  Every edge
that breaks this is printed with the pair of files (and the symbol) and
the script exits 1.  A circle between folders cannot pass that rule, so
none is possible.  Inside each folder of ONE_WAY the same two kinds of
edges are read between its files, and two files that each include or
call the other fail the check too: one of them is the lower, and what
the lower needs of the higher belongs in the lower or below both.

The diagram in docs/ARCHITECTURE.md between the markers
<!-- layers:begin --> and <!-- layers:end --> is generated from LAYERS and
the measured edges; the check fails when it differs (--write-doc writes
it).  A folder that this build did not compile (an optional part that
configure left out, such as python/ without the CPython module) keeps the
lines the document has for it, its "uses:" line included; the includes
read from its sources must still be among the folders that line names.
Core's private headers are one concern each, and CORE_HEADERS below
says which of them each folder above core may include: an include of
any other core header from outside core fails, naming the file, the
header and the headers that folder may include.
"""
import argparse
import os
import re
import subprocess
import sys

# Bottom to top.  (folder, what it is)
LAYERS = [
    [("kernel", "alloy's core: ops, DataPtr, registry, ALLOY_CONF, modules, plugins")],
    [("devices", "CUDA memory sources; the thread's device and stream")],
    [("allocators", "built-in allocators: default, fail, debug, CUDA "
      "policies"),
     ("contexts", "cpu and cuda device contexts"),
     ("reporter", "accounting, event log, trace, exit and leak reports")],
    [("tensor", "TypeMeta, Storage, Tensor, Blob, Workspace, "
      "SyncedMemory")],
    [("root", "liballoy's composition root: what it registers at start"),
     ("modules", "alloy_<name>.so: jemalloc, mimalloc (with their "
      "caches), cuda")],
    [("control", "the control socket of a running program: protocol, "
      "server, commands")],
    [("preload", "liballoy_preload.so: the malloc family for any program")],
    [("interop", "DLPack and the PyTorch allocator adapter")],
    [("analysis", "the offline trace analysis: reader, summary, peak, "
      "replay, symbols, renderers")],
    [("bench", "the benchmarks behind alloy bench")],
    [("python", "the CPython module"),
     ("cli", "the alloy command: dispatch and a file per subcommand")],
]

# Folders whose files must not depend on each other both ways.  The
# others still have such pairs of files; a folder joins once it has none.
ONE_WAY = {"analysis", "bench", "cli"}

# Names of the C library that a folder defines in libc's place (the
# LD_PRELOAD front's malloc family and fork-handler registration): a call
# to one of them is a call into libc, which every folder may make, not
# into that folder.
LIBC_NAMES = {"malloc", "free", "cfree", "calloc", "realloc", "reallocarray",
              "posix_memalign", "aligned_alloc", "memalign", "valloc",
              "pvalloc", "malloc_usable_size", "malloc_trim",
              "pthread_atfork", "__register_atfork", "pthread_create",
              "mmap", "mmap64",
              "munmap", "mremap"}

# Which of core's private headers ("kernel/x.h") a folder above core may
# include.  Every folder may include CORE_HEADERS_EVERY (what any layer
# needs: visibility and errors, memory that is not the process's malloc,
# ALLOY_CONF's parsed form, the mixing function, alloy's descriptors);
# a folder named in CORE_HEADERS may also include those listed for it.
# A core header named in neither is core's alone.  tests/ and fuzz/ are
# white-box and not held to this.
CORE_HEADERS_EVERY = {"base.h", "arena.h", "conf.h", "fd.h", "hash.h",
                      "sanitizer.h"}
CORE_HEADERS = {
    # the default allocator's per-thread cache hangs off the thread's
    # record and counts there; a wrapper holds its inner in the table
    "allocators": {"count.h", "registry.h"},
    # its counters and sections, an allocator's name and key, the hooks
    # it installs, owner labels, its fork handlers nested in core's, the
    # walk of the unwind tables
    "reporter": {"count.h", "registry.h", "hooks.h", "owner.h", "fork.h",
                 "unwind.h"},
    # a blob's name kept as an owner label
    "tensor": {"owner.h"},
    # the composer and its configuration steps, ALLOY_PLUGINS
    "root": {"compose.h", "plugins.h", "secure.h"},
    # the front's engine: the malloc family's functions and its depth;
    # the thread's record, whose slow word and counters malloc's and
    # free's inlined fast paths read and write
    "preload": {"front.h", "count.h"},
    # times core's walk of the unwind tables against libunwind's
    "bench": {"unwind.h"},
    # never opened in secure-execution mode; which allocators served
    # malloc (the front counts their blocks, not their bytes)
    "control": {"secure.h", "front.h"},
}

LEVEL = {f: i for i, line in enumerate(LAYERS) for f, _ in line}
ROLE = {f: role for line in LAYERS for f, role in line}
SRC_EXT = (".c", ".h", ".cc", ".cpp")
DOC = "docs/ARCHITECTURE.md"
BEGIN, END = "<!-- layers:begin -->", "<!-- layers:end -->"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    first = path.split("/", 1)[0]
    return first if first in LEVEL else None


def include_edges(top):
    """(from_file, to_file, what) for quoted includes between the folders'
    files, inside a folder too."""
    edges = []
    for f in LEVEL:
        d = os.path.join(top, f)
        if not os.path.isdir(d):
            continue
        for dirpath, _, files in os.walk(d):
            for name in sorted(files):
                if not name.endswith(SRC_EXT):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), top)
                with open(os.path.join(top, path), errors="replace") as fh:
                    text = fh.read()
                for inc in INCLUDE.findall(text):
                    beside = os.path.join(os.path.dirname(path), inc)
                    if os.path.exists(os.path.join(top, beside)):
                        target = os.path.normpath(beside)
                    elif os.path.exists(os.path.join(top, inc)):
                        target = os.path.normpath(inc)
                    else:
                        continue  # generated or system header
                    if folder_of(target) and target != path:
                        edges.append((path, target, "#include"))
    return edges


def objects(build, top):
    """{object path relative to build: (folder, source)} for the objects of
    the library and the programs whose sources still exist."""
    found = {}
    for f in LEVEL:
        d = os.path.join(build, f)
        if not os.path.isdir(d):
            continue
        for dirpath, _, files in os.walk(d):
            for name in files:
                if name.endswith(".o"):
                    rel = os.path.relpath(os.path.join(dirpath, name), build)
                    src = source_of(rel, top)
                    if src:
                        found[rel] = (f, src)
    return found


def source_of(obj, top):
    """modules/.libs/alloy_cuda_la-cuda.o -> modules/cuda.c, or None when
    no such source exists (an object left over from a file since moved)."""
    rel = os.path.dirname(obj).replace("/.libs", "")
    base = os.path.basename(obj)[:-2]
    if "-" in base:  # automake's per-target prefix
        base = base.split("-", 1)[1]
    for ext in SRC_EXT:
        src = "%s/%s%s" % (rel, base, ext)
        if os.path.exists(os.path.join(top, src)):
            return src
    return None


def nm(path, flags):
    out = subprocess.run(["nm", "-P"] + flags + [path], capture_output=True,
                         text=True, check=False).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            yield parts[0], parts[1]


def call_edges(build, top):
    objs = objects(build, top)
    defined = {}  # symbol -> set of (folder, source)
    undefined = {}
    for obj, (f, src) in objs.items():
        p = os.path.join(build, obj)
        for sym, kind in nm(p, ["--defined-only", "-g"]):
            if kind in "TDBRVWtdbr" and sym not in LIBC_NAMES:
                defined.setdefault(sym, set()).add((f, src))
        undefined[obj] = [s for s, _ in nm(p, ["--undefined-only"])]
    edges = []
    for obj, syms in undefined.items():
        f, src = objs[obj]
        for sym in syms:
            owners = defined.get(sym, set())
            if any(of == f for of, _ in owners):
                # Its own folder defines it (a program may define what
                # another folder does too): an edge inside the folder.
                for osrc in sorted(o for of, o in owners
                                   if of == f and o != src):
                    edges.append((src, osrc, sym))
                    break
                continue
            for of, osrc in sorted(owners):
                edges.append((src, osrc, sym))
                break
    return edges, {f for f, _ in objs.values()}


def violations(edges):
    bad = []
    for a, b, what in edges:
        fa, fb = folder_of(a), folder_of(b)
        if fa == fb:
            continue
        if LEVEL[fb] > LEVEL[fa]:
            bad.append((a, b, what, "upward"))
        elif LEVEL[fb] == LEVEL[fa]:
            bad.append((a, b, what, "between peers"))
    return bad


def core_header_violations(edges, top):
    """Messages for includes of core headers that CORE_HEADERS does not
    grant the including folder, and for names in the table that are no
    header of core's."""
    bad = []
    for a, b, _ in edges:
        fa = folder_of(a)
        if folder_of(b) != "kernel" or fa == "kernel":
            continue
        header = os.path.relpath(b, "kernel")
        allowed = CORE_HEADERS_EVERY | CORE_HEADERS.get(fa, set())
        if header not in allowed:
            bad.append("check-layers: %s includes kernel/%s, which %s/ may "
                       "not include (%s/ may include core's %s: "
                       "CORE_HEADERS in scripts/check-layers.py)" %
                       (a, header, fa, fa, ", ".join(sorted(allowed))))
    named = CORE_HEADERS_EVERY.union(*CORE_HEADERS.values())
    for header in sorted(named):
        if not os.path.exists(os.path.join(top, "kernel", header)):
            bad.append("check-layers: CORE_HEADERS names kernel/%s, which "
                       "does not exist" % header)
    for f in sorted(set(CORE_HEADERS) - set(LEVEL)):
        bad.append("check-layers: CORE_HEADERS names %s/, which is no "
                   "folder of LAYERS" % f)
    return bad


def two_way(edges):
    """(a, why a -> b, b, why b -> a) for files of one folder of ONE_WAY
    that each include or call the other."""
    seen = {}
    for a, b, what in edges:
        if folder_of(a) == folder_of(b) and folder_of(a) in ONE_WAY:
            seen.setdefault((a, b), what)
    return [(a, what, b, seen[(b, a)])
            for (a, b), what in sorted(seen.items())
            if a < b and (b, a) in seen]


def documented(old):
    """{folder: its lines in the document's diagram}: the folder's line
    and the "uses:" line under it."""
    blocks, cur = {}, None
    for line in old.splitlines():
        m = re.match(r"\s*(\w+)/", line)
        if m and m.group(1) in LEVEL:
            cur = blocks.setdefault(m.group(1), [])
            cur.append(line)
        elif cur is not None and line.strip().startswith("uses:"):
            cur.append(line)
        else:
            cur = None
    return blocks


def documented_uses(lines):
    """The folders a documented "uses:" line names."""
    return {g for line in lines if line.strip().startswith("uses:")
            for g in re.findall(r"(\w+)/", line)}


def diagram(top, deps, built, old):
    """The text between the markers: two lines per folder, top first."""
    old_blocks = documented(old)
    lines = ["```"]
    for level in reversed(LAYERS):
        for f, role in level:
            if not os.path.isdir(os.path.join(top, f)):
                continue  # a home reserved for a part not written yet
            if f not in built and f in old_blocks:
                lines.extend(old_blocks[f])
                continue
            uses = sorted(deps.get(f, ()), key=lambda g: (-LEVEL[g], g))
            lines.append(" %-11s %s" % (f + "/", role))
            lines.append(" %-11s   uses: %s" % ("", ", ".join(
                g + "/" for g in uses) if uses else "nothing above libc"))
    lines.append("```")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--top", default=os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    top = args.top
    inc = include_edges(top)
    calls, built = call_edges(args.build, top)
    if not built:
        print("check-layers: no objects under %s: build first" % args.build)
        return 1
    status = 0
    for a, b, what, kind in sorted(set(violations(inc + calls))):
        print("check-layers: %s dependency: %s -> %s (%s)" %
              (kind, a, b, what))
        status = 1
    for msg in core_header_violations(inc, top):
        print(msg)
        status = 1
    for a, why_ab, b, why_ba in two_way(inc + calls):
        print("check-layers: two files of %s/ depend on each other: "
              "%s -> %s (%s), %s -> %s (%s)" %
              (folder_of(a), a, b, why_ab, b, a, why_ba))
        status = 1
    deps = {}
    for a, b, _ in inc + calls:
        if folder_of(a) != folder_of(b):
            deps.setdefault(folder_of(a), set()).add(folder_of(b))
    for f in built:
        deps.setdefault(f, set())

    docpath = os.path.join(top, DOC)
    with open(docpath) as fh:
        doc = fh.read()
    if BEGIN not in doc or END not in doc:
        print("check-layers: %s has no %s ... %s block" % (DOC, BEGIN, END))
        return 1
    head, rest = doc.split(BEGIN, 1)
    old, tail = rest.split(END, 1)
    # A folder not compiled here: its calls are not seen, but its sources'
    # includes are, and the document must name each folder they reach.
    old_blocks = documented(old)
    for f in sorted(set(LEVEL) - built):
        if f not in old_blocks:
            continue
        missing = deps.get(f, set()) - documented_uses(old_blocks[f])
        for g in sorted(missing):
            print("check-layers: %s (not built here) includes from %s/, "
                  "which its uses: line in %s does not name" % (f, g, DOC))
            status = 1
    new = diagram(top, deps, built, old)
    if old.strip() != new.strip():
        if args.write_doc:
            with open(docpath, "w") as fh:
                fh.write(head + BEGIN + "\n" + new + "\n" + END + tail)
            print("check-layers: wrote the diagram into %s" % DOC)
        else:
            print("check-layers: the diagram in %s does not match the "
                  "build; scripts/check-layers.py --write-doc shows the "
                  "true one:\n%s" % (DOC, new))
            status = 1
    if status == 0:
        n = len({(a, b) for a, b, _ in inc + calls
                 if folder_of(a) != folder_of(b)})
        print("check-layers: %d file pairs across %d folders, all "
              "downward" % (n, len(built)))
        unbuilt = [f + "/" for level in LAYERS for f, _ in level
                   if f not in built and f in old_blocks]
        if unbuilt:
            print("check-layers: skipped: the calls of %s (not built "
                  "here); the document's lines for them kept, their "
                  "includes checked" % ", ".join(unbuilt))
    return status


if __name__ == "__main__":
    sys.exit(main())
