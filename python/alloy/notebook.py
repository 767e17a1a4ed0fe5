# SPDX-License-Identifier: MIT
"""IPython and Jupyter cell magics: what a cell's memory was at its peak.

    %load_ext alloy
    %%alloy_flamegraph          # the peak's flame graphs, by site and by owner
    %%alloy_peak                # the peak's tables, by site and by owner

The cell runs with its trace written (call stacks on where alloy has
libunwind, NumPy's arrays on alloy in this thread's context), and the
alloy command draws what was live at the trace's peak: the same pages
and tables `alloy report TRACE --format flamegraph` and `--at peak`
give.  Each flame graph is one self-contained page inside an iframe's
srcdoc (its script and styles included, nothing fetched), so a saved
notebook or its HTML export shows it without alloy.
"""
import html
import os
import shutil
import subprocess
import tempfile
from contextlib import ExitStack

from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, \
    parse_argstring
from IPython.display import HTML, display

from . import _alloy, numpy as alloy_numpy, owner

FRAME_HEIGHT = 420


def command():
    """The alloy command that goes with this module (the build tree's, or
    the one installed beside liballoy), else alloy on PATH."""
    path = _alloy._command
    if path and os.access(path, os.X_OK):
        return path
    found = shutil.which("alloy")
    if found:
        return found
    raise RuntimeError(
        "alloy: the notebook magics draw with the alloy command, which is "
        "neither at %s nor on PATH (make install puts it in the prefix's "
        "bin/)" % path)


def _report(trace, *args):
    """The alloy command's report of trace: its output, or RuntimeError
    with what it said."""
    env = dict(os.environ)
    # The report must not write a trace of its own, nor the kernel's.
    env.pop("ALLOY_CONF", None)
    done = subprocess.run([command(), "report", trace] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env)
    if done.returncode:
        raise RuntimeError("alloy report %s: %s" % (
            " ".join(args), done.stderr.strip() or "exit %d" % done.returncode))
    return done.stdout


def _backtrace_configured():
    return os.environ.get("ALLOY_CONF", "") and any(
        item.strip() in ("backtrace:1", "backtrace:on", "backtrace:true")
        for item in os.environ["ALLOY_CONF"].split(","))


def _numpy_context():
    """NumPy's arrays on alloy for the cell, in this thread's context,
    when NumPy is there."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return None
    return alloy_numpy.allocator()


class CellTrace:
    """Run a cell of shell with its trace written to a temporary file."""

    def __init__(self, shell, label=None):
        self.shell = shell
        self.label = label
        self.dir = tempfile.mkdtemp(prefix="alloy-cell-")
        self.trace = os.path.join(self.dir, "cell.trace")
        self.stacks = True
        self.failed = False

    def run(self, cell):
        stacks_were_on = _backtrace_configured()
        try:
            _alloy.set_backtrace(True)
        except RuntimeError:
            self.stacks = False  # no libunwind: owners only
        with ExitStack() as stack:
            ctx = _numpy_context()
            if ctx is not None:
                stack.enter_context(ctx)
            _alloy.trace_start(self.trace)
            try:
                if self.label:
                    with owner(self.label):
                        result = self.shell.run_cell(cell, store_history=False)
                else:
                    result = self.shell.run_cell(cell, store_history=False)
            finally:
                _alloy.trace_stop()
                if self.stacks and not stacks_were_on:
                    _alloy.set_backtrace(False)
        self.failed = not result.success
        return result

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def _iframe(page, title):
    return ('<iframe title="%s" srcdoc="%s" style="width: 100%%; height: '
            '%dpx; border: 1px solid #ccc;" loading="eager"></iframe>' %
            (html.escape(title), html.escape(page, quote=True), FRAME_HEIGHT))


def _note(stacks):
    if stacks:
        return ""
    return ("<p><em>alloy was built without libunwind: no call stacks, the "
            "sites are one box.</em></p>")


@magics_class
class AlloyMagics(Magics):
    @magic_arguments()
    @argument("--by", choices=("both", "site", "owner"), default="both",
              help="the graph by call site, by owner, or both (default)")
    @argument("--owner", metavar="LABEL",
              help="an owner label over everything the cell allocates")
    @cell_magic
    def alloy_flamegraph(self, line, cell):
        """Run the cell and show what was live at its peak as flame graphs:
        by call site and by owner (`with alloy.owner(...)` labels)."""
        args = parse_argstring(self.alloy_flamegraph, line)
        run = CellTrace(self.shell, args.owner)
        try:
            run.run(cell)
            kinds = ("site", "owner") if args.by == "both" else (args.by,)
            parts = [_note(run.stacks)]
            for by in kinds:
                page = _report(run.trace, "--format", "flamegraph",
                               "--by", by)
                parts.append('<div class="alloy-flamegraph" data-by="%s">'
                             '<h4>alloy: the cell\'s peak by %s</h4>%s</div>'
                             % (by, by, _iframe(page, "peak by " + by)))
            display(HTML("".join(parts)))
        finally:
            run.close()

    @magic_arguments()
    @argument("--top", type=int, default=10,
              help="rows per table (0: all; default 10)")
    @argument("--owner", metavar="LABEL",
              help="an owner label over everything the cell allocates")
    @cell_magic
    def alloy_peak(self, line, cell):
        """Run the cell and show what was live at its peak: the tables by
        call site and by owner, as `alloy report TRACE --at peak`."""
        args = parse_argstring(self.alloy_peak, line)
        run = CellTrace(self.shell, args.owner)
        try:
            run.run(cell)
            text = _report(run.trace, "--at", "peak", "--top", str(args.top))
            text = text.replace(run.trace, "the cell")
            display(HTML('%s<pre class="alloy-peak">%s</pre>' %
                         (_note(run.stacks), html.escape(text))))
        finally:
            run.close()


def load(ipython):
    ipython.register_magics(AlloyMagics)
