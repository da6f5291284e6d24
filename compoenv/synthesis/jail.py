"""The child side of the sandbox: resource limits, an audit hook, then the worker.

Run only by ``compoenv.synthesis.remote``, as ``command(config)`` (``python -I -c ...``).
Before any generated code is imported, the process limits its memory (RLIMIT_AS), CPU time,
file sizes and open files, and installs an audit hook (``sys.addaudithook``; a hook cannot be
removed) that denies:

- opening a path outside the job's temp dir for writing, or outside it and the Python
  installation, compoenv and the service library for reading;
- every ``socket.*`` event (no network, not even loopback);
- starting a process (``subprocess.Popen``, ``os.system``, ``os.exec*``, ``os.spawn*``,
  ``os.posix_spawn``, ``os.fork``);
- ``ctypes`` (it would reach C functions that no audit event covers), ``gc``'s object
  searches (they would find this hook), signals to other processes, opening a directory
  outside the temp dir (its descriptor would anchor ``dir_fd=`` opens), and changing files
  outside the temp dir (remove, rename, links, permissions).

An audit hook contains what a model's code does by accident or by naive intent, and says what
it tried; it is not a security boundary against code written to break out of the interpreter.
The boundary is the operating system's: this process runs under bubblewrap
(``compoenv.synthesis.boundary``), and only with ``--unsafe`` without it.

Then the process serves ``compoenv.synthesis.worker``'s requests: it imports the module and
runs its tools one call at a time for the checks, which run in the caller's process. Each
denial is sent to the caller (a ``denied`` message) before it is raised, so code that
catches the PermissionError, or runs into the time limit afterwards, is still reported.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any, Callable

__all__ = ["JAIL_MODULE", "environment", "main", "command"]

JAIL_MODULE = "compoenv.synthesis.jail"
MAX_PROCESSES = 64  # RLIMIT_NPROC of the sandbox's user (threads count too)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PROCESS_EVENTS = frozenset({"os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg",
                             "pty.spawn", "signal.pthread_kill", "os.setuid", "os.setgid"})
_PATH_EVENTS = {  # event -> indices of the paths it changes
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1),
    "os.chmod": (0,), "os.chown": (0,), "os.truncate": (0,), "os.utime": (0,),
    "shutil.rmtree": (0,), "shutil.copyfile": (1,), "shutil.move": (0, 1),
    "os.chdir": (0,), "os.chroot": (0,)}
_DENIED_LINKS = frozenset({"os.symlink", "os.link"})


class _Jail:
    """The audit hook's rules; each denial is reported on ``report`` and raised."""

    def __init__(self, root: str, readable: list[str]) -> None:
        self.root = os.path.realpath(root)
        self.readable = [os.path.realpath(p) for p in readable]
        self.report: Callable[[str], None] | None = None  # tells the caller (set by main)

    def _inside(self, path: Any, roots: list[str]) -> bool:
        if isinstance(path, int):
            return True  # a descriptor already open: its path was checked when it opened
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        full = os.path.realpath(os.path.join(self.root, os.fspath(path)))
        return any(full == r or full.startswith(r.rstrip(os.sep) + os.sep) for r in roots)

    def _outside_directory(self, path: Any) -> bool:
        if isinstance(path, int):
            return False
        full = os.path.realpath(os.path.join(self.root, os.fsdecode(path)))
        return os.path.isdir(full) and not self._inside(full, [self.root])

    def deny(self, what: str) -> None:
        if self.report is not None:  # at once: a job killed at its time limit still tells
            self.report(what)
        raise PermissionError(f"contained: {what}")

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            writes = bool(flags & _WRITE_FLAGS) or any(c in str(mode or "") for c in "wax+")
            roots = [self.root] if writes else [self.root, *self.readable]
            if path is not None and not self._inside(path, roots):
                self.deny(f"tried to {'write' if writes else 'read'} {path}")
            if path is not None and not writes and self._outside_directory(path):
                # a directory's descriptor would let dir_fd= opens escape the checks above
                self.deny(f"tried to open the directory {path}")
        elif event.startswith("socket."):
            target = f" to {args[1]!r}" if event == "socket.connect" and len(args) > 1 else ""
            self.deny(f"tried to use the network ({event}{target})")
        elif event == "subprocess.Popen":
            command = list(args[1]) if isinstance(args[1], (list, tuple)) else [args[1]]
            self.deny(f"tried to start a process: {' '.join(map(str, command))[:200]}")
        elif (event in _PROCESS_EVENTS or event.startswith(("os.exec", "os.spawn",
                                                             "os.posix_spawn"))):
            self.deny(f"tried to start or signal a process ({event})")
        elif event.startswith(("ctypes.", "gc.get_")) or event in _DENIED_LINKS:
            # ctypes reaches C that no event covers; gc would find this hook and change it
            self.deny(f"tried {event}")
        elif event in _PATH_EVENTS:
            for index in _PATH_EVENTS[event]:
                if index < len(args) and not self._inside(args[index], [self.root]):
                    self.deny(f"tried {event} on {args[index]}")
        elif event in ("os.listdir", "os.scandir") and args and args[0] is not None:
            if not self._inside(args[0], [self.root, *self.readable, *sys.path]):
                self.deny(f"tried to list {args[0]}")


def _limit(memory_mb: int, cpu_s: int, isolated: bool) -> None:
    """The rlimits of this process and its children; the process count only under the
    boundary, where it counts the sandbox's own user (outside, it would count the caller's
    every process)."""
    for kind, value in ((resource.RLIMIT_AS, memory_mb * 1024 * 1024),
                        (resource.RLIMIT_CPU, cpu_s),
                        (resource.RLIMIT_FSIZE, 64 * 1024 * 1024),
                        (resource.RLIMIT_NOFILE, 256), (resource.RLIMIT_CORE, 0),
                        *([(resource.RLIMIT_NPROC, MAX_PROCESSES)] if isolated else [])):
        soft, hard = resource.getrlimit(kind)
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (cap, cap if kind != resource.RLIMIT_CPU else hard))


def command(config: dict[str, Any]) -> list[str]:
    """How a jailed job starts: ``python -I`` with compoenv's own folder first on its path
    (the caller's copy of compoenv, not whatever an installed finder points at)."""
    boot = (f"import sys; sys.path[:0] = {list(config['path'])!r}; "
            f"from {JAIL_MODULE} import main; sys.exit(main(sys.argv[1:]))")
    return [sys.executable, "-I", "-c", boot, json.dumps(config)]


def environment(root: str) -> dict[str, str]:
    """The whole environment of a jailed process: home and temp files in its temp dir."""
    return {"HOME": root, "TMPDIR": root, "LANG": "C.UTF-8", "PATH": "/nonexistent"}


def main(argv: list[str]) -> int:
    """Serve one worker (``compoenv.synthesis.worker``) inside the jail."""
    config = json.loads(argv[0])
    _limit(int(config["memory_mb"]), int(config["cpu_s"]), bool(config.get("isolated")))
    os.chdir(config["root"])
    sys.dont_write_bytecode = True  # compoenv's own caches live outside the temp dir
    from compoenv.synthesis import worker  # imported before the hook: the trusted side

    channel = worker.Channel.take_standard_streams()  # the module's prints go to stderr
    jail = _Jail(config["root"], config["readable"])
    jail.report = channel.denied
    sys.addaudithook(jail)
    return worker.serve(channel, config)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
