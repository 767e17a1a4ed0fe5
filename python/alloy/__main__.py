# SPDX-License-Identifier: MIT
"""python3 -m alloy [--conf CONF] [--torch] [--no-numpy]
                   (SCRIPT | -m MODULE | -c CODE) [ARGS...]

Run an unmodified Python program with NumPy's arrays (and, with --torch,
PyTorch's CPU tensors) on alloy.  ALLOY_CONF (or --conf, added to it)
picks the backend and the reporter: report:stderr prints the table at
exit, trace:FILE writes the event trace.

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

TUNABLE = "glibc.rtld.optional_static_tls"
STATIC_TLS = 16384
REEXEC_MARK = "ALLOY_PYTHON_REEXEC"

USAGE = __doc__.split("\n\n")[0]


def fail(message, code=2):
    sys.stderr.write("python3 -m alloy: %s\n" % message)
    sys.exit(code)


def parse(argv):
    """(options, kind, target, args) from the command line."""
    opts = {"conf": [], "torch": False, "numpy": True}
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
        elif a in ("-m", "-c"):
            if i + 1 == len(argv):
                fail("%s needs a value\n%s" % (a, USAGE))
            return opts, a, argv[i + 1], argv[i + 2:]
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


def run(kind, target, args):
    if kind == "script":
        sys.argv = [target] + args
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")
    elif kind == "-m":
        sys.argv = [target] + args
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c"] + args
        code = compile(target, "<string>", "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})


def main():
    opts, kind, target, args = parse(sys.argv[1:])
    # The second start: the environment is set up already.
    if not os.environ.pop(REEXEC_MARK, None):
        if opts["conf"]:
            os.environ["ALLOY_CONF"] = ",".join(filter(
                None, [os.environ.get("ALLOY_CONF", "")] + opts["conf"]))
        reexec_with_static_tls()
    put_on_alloy(opts)
    run(kind, target, args)


if __name__ == "__main__":
    main()
