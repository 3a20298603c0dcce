"""The explorer's first frame in instructions: a figure the machine's load does not move.

Wall times of `pcscope open` on the shared two-core machine move by 2x with the load (the
table's first-frame row has differed from branch to branch for no code reason). This counts
the instructions (callgrind's Ir) from process start to the first frame Textual paints, in
the same pseudo-terminal (160×48) and on the same indexed 1M-row profile as the table; two
runs of one checkout agree within 0.1 %. Other checkouts' packages (``--against DIR``: a
folder holding a ``pcscope`` package, e.g. a copy of main's) run with this checkout's
interpreter, in turn with it.

    python -m bench.first_frame_ir [--against DIR ...]     (needs valgrind; ~1 min a run)
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.measure import compile_bytecode
from bench.tui_bench import SIZE, prepare_index_apart

BIG = Path("bench/out/big/profile.csv.gz")
# `pcscope open`, ended by the first painted frame (the exit leaves callgrind's totals).
PROBE = """\
import os, sys
import textual.app
display = textual.app.App._display
def first_frame(app, screen, renderable):
    display(app, screen, renderable)
    if renderable is not None:
        os._exit(0)
textual.app.App._display = first_frame
from pcscope.cli.main import main
main(sys.argv[1:])
"""


def instructions(package_dir: Path | None, index_dir: Path, work: Path) -> int:
    """Instructions to the first frame with ``package_dir`` (None: this checkout)."""
    out, session = work / "callgrind.out", work / "session.sqlite"
    for stale in work.glob("session.sqlite*"):
        stale.unlink()
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
            "-c", PROBE, "open", str(BIG.resolve()), "--index-dir", str(index_dir.resolve()),
            "--session", str(session)]
    env = dict(os.environ, TERM="xterm-256color", XDG_CONFIG_HOME=str(work / "config"))
    if package_dir is not None:
        env["PYTHONPATH"] = str(package_dir)
    pid, fd = pty.fork()
    if pid == 0:  # the child: size the terminal, run the probe under callgrind
        import fcntl
        import struct
        import termios

        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
        os.chdir(work)  # `python -c` puts its folder first on the path, before PYTHONPATH
        os.execvpe(argv[0], argv, env)
    while True:  # drain the terminal until the child is gone
        try:
            if not os.read(fd, 1 << 16):
                break
        except OSError:
            break
    os.waitpid(pid, 0)
    os.close(fd)
    found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    if found is None:
        raise RuntimeError(f"no callgrind totals in {out}")
    return int(found.group(1))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.first_frame_ir")
    ap.add_argument("--against", type=Path, action="append", default=[], metavar="DIR")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed", file=sys.stderr)
        return 2
    compile_bytecode()
    for other in args.against:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(other)], check=True)
    index_dir = Path("bench/out/table-tui")
    prepare_index_apart(BIG, None, index_dir)
    with tempfile.TemporaryDirectory() as tmp:
        for name, package in [("this checkout", None), *((str(d), d) for d in args.against)]:
            count = instructions(package, index_dir, Path(tmp))
            print(f"{name:40} {count / 1e6:9.1f} M instructions to the first frame")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
