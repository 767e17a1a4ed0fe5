# SPDX-License-Identifier: MIT
"""python3 -m alloy [--conf CONF] [--torch] [--no-numpy] [--leaks]
                   [--python-allocators[=SPEC]]
                   (SCRIPT | - | -m MODULE | -c CODE) [ARGS...]

Run an unmodified Python program with NumPy's arrays (and, with --torch,
PyTorch's CPU tensors) on alloy.  ALLOY_CONF (or --conf, added to it)
picks the backend and the reporter: report:stderr prints the table at
exit, trace:FILE writes the event trace.  `-` reads the program from
standard input.  --python-allocators routes Python's own allocations
too: SPEC is DOMAIN[:ALLOCATOR],... with DOMAIN raw, mem, obj or all
(the default), e.g. --python-allocators=obj:mimalloc,mem.  --leaks
records each block's call stack and, at exit, lists the blocks the
program made and still holds, by Python line.

The interpreter is started once more first, with
GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384: a library loaded
after start (liballoy, then a backend such as libjemalloc) can only get
static TLS from that reserve, and glibc's default reserve is smaller than
what libjemalloc needs.  A backend that still cannot be loaded stops the
run with the reason; alloy never falls back to another silently.
"""
import os
import runpy
import sys
import traceback

from . import _ending, pymem

TUNABLE = "glibc.rtld.optional_static_tls"
STATIC_TLS = 16384
REEXEC_MARK = "ALLOY_PYTHON_REEXEC"

USAGE = __doc__.split("\n\n")[0]


def fail(message, code=2):
    sys.stderr.write("python3 -m alloy: %s\n" % message)
    sys.exit(code)


def _plain(e):
    """An exception's message without the module's own "alloy: "."""
    return str(e).replace("alloy: ", "", 1)


def check_pymem(spec, what="--python-allocators"):
    try:
        pymem.parse(spec)
    except ValueError as e:
        fail("%s: %s" % (what, _plain(e)))


def parse(argv):
    """(options, kind, target, args) from the command line."""
    # ALLOY_PYTHON_ALLOCATORS, where set, is the option's default.
    opts = {"conf": [], "torch": False, "numpy": True,
            "pymem": os.environ.get(pymem.ENV), "leaks": False}
    if opts["pymem"] is not None:
        check_pymem(opts["pymem"], pymem.ENV)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        elif a == "--conf":
            if i + 1 == len(argv):
                fail("--conf needs a value, e.g. --conf cpu:jemalloc,report:stderr")
            opts["conf"].append(argv[i + 1])
            i += 2
            continue
        elif a.startswith("--conf="):
            opts["conf"].append(a[len("--conf="):])
        elif a == "--torch":
            opts["torch"] = True
        elif a == "--no-numpy":
            opts["numpy"] = False
        elif a == "--python-allocators" or \
                a.startswith("--python-allocators="):
            opts["pymem"] = a.partition("=")[2] or "all"
            check_pymem(opts["pymem"])
        elif a == "--leaks":
            opts["leaks"] = True
        elif a in ("-m", "-c"):
            if i + 1 == len(argv):
                fail("%s needs a value\n%s" % (a, USAGE))
            return opts, a, argv[i + 1], argv[i + 2:]
        elif a == "-":
            return opts, "stdin", a, argv[i + 1:]
        elif a.startswith("-"):
            fail("unknown option %s\n%s" % (a, USAGE))
        else:
            return opts, "script", a, argv[i + 1:]
        i += 1
    fail("no program to run\n%s" % USAGE)


def reexec_with_static_tls():
    """Start this command again with room for late static TLS, unless it
    has that room already."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if TUNABLE in tunables:
        return
    os.environ["GLIBC_TUNABLES"] = ":".join(
        filter(None, [tunables, "%s=%d" % (TUNABLE, STATIC_TLS)]))
    os.environ[REEXEC_MARK] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable] + sys.orig_argv[1:])


def put_on_alloy(opts):
    import alloy
    try:
        alloy._alloy._ready()
    except RuntimeError as e:
        fail(str(e), 1)
    # First, so that as little as possible is made before it.
    if opts["pymem"] is not None:
        try:
            alloy.python_allocators(opts["pymem"])
        except ValueError as e:
            fail("--python-allocators: %s" % _plain(e))
    # `alloy ctl` and `alloy top` reach the program through it; a failure
    # to open it is said on stderr and the program runs on.
    try:
        alloy.control_start()
    except RuntimeError:
        pass
    if opts["numpy"]:
        try:
            import numpy  # noqa: F401
        except ImportError:
            sys.stderr.write("python3 -m alloy: NumPy is not installed; "
                             "its arrays cannot go on alloy\n")
        else:
            alloy.numpy.enable()
    if opts["torch"]:
        try:
            alloy.torch.enable()
        except (ImportError, RuntimeError) as e:
            fail("--torch: %s" % e, 1)


def check_script(target):
    """A script that cannot be opened stops the run as Python's own does:
    one line, exit 2."""
    try:
        if not os.path.isdir(target):
            open(target, "rb").close()
    except OSError as e:
        sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n" % (
            "python3 -m alloy", os.path.abspath(target), e.errno,
            e.strerror))
        sys.exit(2)


def _runner_frame(tb):
    name = tb.tb_frame.f_code.co_filename
    return name in (__file__, runpy.__file__) or name == "<frozen runpy>"


CHILD_MARK = "ALLOY_PYTHON_CHILD"


def cover_children(opts):
    """Every Python the program starts (multiprocessing's spawn and
    forkserver workers too) sets itself up as this one is: through
    alloy/_child/sitecustomize.py, first on PYTHONPATH."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child")
    os.environ[CHILD_MARK] = ",".join(
        k for k in ("numpy", "torch") if opts[k]) or "none"
    path = os.environ.get("PYTHONPATH", "")
    if opts["pymem"] is not None:
        os.environ[pymem.ENV] = opts["pymem"]
    if here not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, path]))


def put_child_on_alloy(what):
    """In a child interpreter: NumPy's arrays (and PyTorch's tensors) on
    alloy as in the parent; a failure is said on stderr and the child runs
    on, as its parent could not have started otherwise."""
    try:
        import alloy
        alloy._alloy._ready()
        if "numpy" in what:
            try:
                import numpy  # noqa: F401
            except ImportError:
                pass
            else:
                alloy.numpy.enable()
        if "torch" in what:
            alloy.torch.enable()
        _ending.install(runner=False)
    except Exception as e:
        sys.stderr.write("python3 -m alloy (child %d): %s\n" % (
            os.getpid(), e))


def run_program(kind, target, args):
    """Run it; its globals, which hold what it made."""
    if kind == "script":
        sys.argv = [target] + args
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        return runpy.run_path(target, run_name="__main__")
    elif kind == "-m":
        sys.argv = [target] + args
        return runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        if kind == "stdin":
            sys.argv = ["-"] + args
            sys.path[0] = ""
            code = compile(sys.stdin.read(), "<stdin>", "exec")
        else:
            sys.argv = ["-c"] + args
            code = compile(target, "<string>", "exec")
        g = {"__name__": "__main__", "__builtins__": __builtins__}
        exec(code, g)
        return g


def leaks_at_exit(mark, out=None):
    """Print what the program made since mark and still holds, by line."""
    import alloy
    out = out or sys.stderr
    rows = alloy.leaks(since=mark, top=20)
    out.write("python3 -m alloy --leaks: blocks the program made and still "
              "holds at exit, by Python line (%d lines)\n" % len(rows))
    out.write("%14s %9s  %s\n" % ("bytes", "blocks", "line"))
    for r in rows:
        where = ("(no Python frame)" if r["function"] is None else
                 "%s:%d %s" % (r["file"], r["line"], r["function"]))
        out.write("%14d %9d  %s\n" % (r["bytes"], r["blocks"], where))
    out.flush()


def start_leaks():
    """Record stacks from now on and mark the program's start."""
    import alloy
    if not alloy.reporter_enabled():
        alloy.reporter_enable()
    try:
        alloy.set_backtrace(True)
    except RuntimeError as e:
        fail("--leaks: %s" % e, 1)
    return alloy.mark()


def run(kind, target, args):
    """Run the program; an exception it lets out is printed from its own
    first frame on, as Python prints it, and the exit status is 1 (130
    for KeyboardInterrupt: alloy/_ending.py says why not SIGINT)."""
    try:
        return run_program(kind, target, args)
    except SystemExit:
        raise
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and _runner_frame(tb):
            tb = tb.tb_next
        # A syntax error of the program itself has no frame of its own.
        e.__traceback__ = tb
        sys.excepthook(type(e), e, tb)
        sys.exit(130 if isinstance(e, KeyboardInterrupt) else 1)


def main():
    opts, kind, target, args = parse(sys.argv[1:])
    if kind == "script":
        check_script(target)
    # The second start: the environment is set up already.
    if not os.environ.pop(REEXEC_MARK, None):
        # run_pid: this process (the same after the exec) keeps report,
        # trace and log paths as given; the Pythons it starts, which
        # inherit ALLOY_CONF, write PATH.PID (as under alloy run).
        os.environ["ALLOY_CONF"] = ",".join(filter(
            None, [os.environ.get("ALLOY_CONF", "")] + opts["conf"] +
            ["run_pid:%d" % os.getpid()]))
        reexec_with_static_tls()
    put_on_alloy(opts)
    _ending.install(runner=True)
    cover_children(opts)
    if not opts["leaks"]:
        run(kind, target, args)
        return
    # Listed while the program's globals (what it holds) are still alive.
    mark = start_leaks()
    try:
        program_globals = run(kind, target, args)  # noqa: F841
    finally:
        leaks_at_exit(mark)


if __name__ == "__main__":
    main()
