"""A small supervisor that no process started by its command can escape (Linux).

``python -I -S _reaper.py GRACE PARENT COMMAND...`` makes itself a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``), runs COMMAND as its child and waits for it. A descendant
that leaves the command's process group, by ``setsid`` or a daemon's double fork, is orphaned
to the nearest subreaper above it, which is this process, not init: every process the command
starts stays in this process's tree, however it detaches. So:

- when COMMAND exits, whatever it left running is killed (SIGKILL), and this process exits
  with COMMAND's status (by the same signal if a signal ended it);
- on SIGTERM, SIGINT or SIGHUP (the harness's timeout or cancellation), or when the process
  that started it goes away, the whole tree gets SIGTERM, GRACE seconds to exit, then SIGKILL.

PARENT is the pid of the process that started it, passed in rather than read here: a harness
killed (SIGKILL) while this interpreter was still starting would otherwise leave `getppid()`
already pointing at init, and the check that the harness is gone would never fire.

It exits only when its tree is empty, so `harness.extend.run_process`, which starts it in a process
group of its own and waits for it, returns with nothing of the command left running. It runs
with the interpreter's own standard library only (``-I -S``: nothing from the environment,
no site packages), so it adds about 20 ms to a command (``bench/processes.py``). Only
`harness._process._child` runs it, and only on Linux; elsewhere the process group is the limit.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

# Imports are kept to what starts fast: not typing (2 ms) nor contextlib (its suppress would
# save three lines, hence the noqa below). TYPE_CHECKING is therefore not typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PARENT_POLL = 1.0  # seconds between checks that the harness is still there


def main(argv: Sequence[str]) -> int:
    if len(argv) < 4:
        os.write(2, b"usage: _reaper.py GRACE PARENT COMMAND...\n")
        return 127
    grace = float(argv[1])
    parent = int(argv[2])
    command = list(argv[3:])
    _become_subreaper()
    watched = {signal.SIGCHLD, *STOP_SIGNALS}
    original_mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    child = os.fork()
    if child == 0:
        _exec(command, original_mask)
    # Hold no end of the command's stdio: the harness reads the output pipe to end-of-file to
    # know that every process of the command has exited, and this one must not count.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    tree = _Tree(child)
    if tree.wait(parent, watched):
        tree.signal(signal.SIGTERM)
        tree.wait_empty(time.monotonic() + grace)
    tree.kill_all()
    return _exit_like(tree.status)


def _become_subreaper() -> None:
    """Adopt orphaned descendants; without it (an old kernel) the process group still holds."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _exec(command: list[str], mask: set[int | signal.Signals]) -> NoReturn:
    """In the forked child: restore what Python changed (ignored SIGPIPE and SIGXFSZ, the
    blocked signals) and run the command, as `subprocess` does; 127 if it cannot start."""
    try:
        for name in ("SIGPIPE", "SIGXFSZ"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"{command[0]}: {exc.strerror or exc}\n".encode(errors="replace"))
    finally:
        os._exit(127)


class _Tree:
    """This process's children and what lies below them; `status` is the command's, once
    reaped."""

    def __init__(self, command: int) -> None:
        self.command = command
        self.status: int | None = None

    def reap(self) -> None:
        """Collect every exited child without waiting, keeping the command's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.command:
                self.status = status

    def wait(self, parent: int, watched: set[signal.Signals]) -> bool:
        """Until the command exits (False) or a stop is asked for (True), which includes
        `parent` being gone (checked at once, and at least every `PARENT_POLL` seconds)."""
        while True:
            self.reap()
            if self.status is not None:
                return False
            if os.getppid() != parent:  # the harness is gone: nobody else will stop it
                return True
            info = signal.sigtimedwait(watched, PARENT_POLL)
            if info is not None and info.si_signo in STOP_SIGNALS:
                return True

    def wait_empty(self, deadline: float) -> None:
        """Reap until no child is left or `deadline` passes."""
        while True:
            self.reap()
            remaining = deadline - time.monotonic()
            if not _has_children() or remaining <= 0:
                return
            signal.sigtimedwait({signal.SIGCHLD}, remaining)

    def kill_all(self) -> None:
        """SIGKILL the whole tree until nothing is left (an orphan of a killed process
        becomes this one's child and is found in the next round)."""
        while True:
            self.reap()
            if not _has_children():
                return
            self.signal(signal.SIGKILL)
            signal.sigtimedwait({signal.SIGCHLD}, 0.1)

    @staticmethod
    def signal(signum: int) -> None:
        for pid in _descendants(os.getpid()):
            try:  # noqa: SIM105
                os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass


def _has_children() -> bool:
    """True while this process has a child, running or exited and not yet reaped."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _descendants(root: int) -> list[int]:
    """Every process below `root`, from the parent links in /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    pending = [root]
    while pending:
        for pid in children.get(pending.pop(), ()):
            found.append(pid)
            pending.append(pid)
    return found


def _exit_like(status: int | None) -> int:
    """Exit as the command did: its exit code, or death by its signal."""
    if status is None:  # never reaped: cannot happen once the tree is empty
        return 127
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:  # noqa: SIM105
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL's cannot be set, nor needs to be
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
        return 128 + signum
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
