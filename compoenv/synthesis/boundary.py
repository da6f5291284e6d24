"""The operating system's isolation boundary around model-written code: bubblewrap.

Every process that runs generated code starts under ``bwrap`` (Debian's ``bubblewrap``; the
sandbox of Flatpak), in namespaces of its own:

- a network namespace with nothing in it (no interface but a loopback of its own);
- a PID, IPC and UTS namespace (it sees and signals only its own processes);
- a mount namespace whose root is an empty tmpfs with only these read-only binds: ``/usr``
  (and the ``/bin``, ``/lib`` links), the Python installation, compoenv and the service
  library, plus the job's temp dir read-write. No ``/etc``, ``/home``, ``/root`` (beyond the
  path to Python), no other file of the repository: they do not exist there, so neither
  their contents nor their metadata (``os.stat``) can be read;
- as root, it runs as an unprivileged user id of its own (drawn from ``SANDBOX_UIDS``, an
  account that does not exist) with every capability dropped, so the rlimits hold (the
  kernel exempts root from ``RLIMIT_NPROC``) and one job's processes do not count against
  another's; otherwise, as the calling user in a user namespace of its own;
- ``--die-with-parent``: when the wall-clock limit kills the job, its whole namespace dies.

The rlimits (address space, CPU, processes, file size, open files) are set by the job itself
before any generated code is imported (``compoenv.synthesis.jail``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable

__all__ = ["SandboxUnavailable", "available", "required", "wrap", "prepare", "sandbox_user",
           "namespace_of", "wait_until_empty"]

# As root, each sandbox runs as a user of its own from this range (no such account exists):
# RLIMIT_NPROC counts a user's processes, so one job's fork bomb cannot starve another's.
SANDBOX_UIDS = range(1 << 20, 1 << 21)


class SandboxUnavailable(RuntimeError):
    """No operating-system boundary can be made here (bubblewrap is missing or fails)."""


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return [str(Path("/", *parts[:i + 1])) for i in range(len(parts))]


def sandbox_user() -> int | None:
    """A fresh user id for one sandbox when we are root (None otherwise: it runs as us)."""
    import secrets

    if os.geteuid() != 0:
        return None
    return SANDBOX_UIDS.start + secrets.randbelow(len(SANDBOX_UIDS))


def wrap(command: list[str], *, writable: str, readable: Iterable[str], user: int | None,
         env: dict[str, str] | None = None, info_fd: int | None = None) -> list[str]:
    """``command`` run under bubblewrap: ``writable`` (the job's temp dir) is the one place it
    may write; ``readable`` (directories) are bound read-only at their own paths; ``env`` is
    its whole environment; bubblewrap writes ``{"child-pid": N}`` to ``info_fd`` when given
    (see ``namespace_of``).

    Raises:
        SandboxUnavailable: no ``bwrap`` on PATH.
    """
    bwrap = _bwrap()
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed "
                                 "(Debian/Ubuntu: apt-get install bubblewrap)")
    root = user is not None
    args = [bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL"]
    if root:  # setpriv needs these two to become nobody; it drops them with the rest
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user"]
    args += ["--ro-bind", "/usr", "/usr"]
    for link in ("bin", "sbin", "lib", "lib64", "lib32"):
        target = Path("/", link)
        if target.is_symlink():
            args += ["--symlink", os.readlink(target), str(target)]
        elif target.is_dir():
            args += ["--ro-bind", str(target), str(target)]
    made: set[str] = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"}
    binds = sorted({os.path.realpath(p) for p in readable if os.path.isdir(p)})
    binds = [p for p in binds if not any(p != o and p.startswith(o.rstrip("/") + "/")
                                         for o in binds)]  # a folder inside another: once
    for path, mode in [(p, "--ro-bind") for p in binds] + [(writable, "--bind")]:
        if path in made or any(path.startswith(m + "/") for m in ("/usr",)):
            continue
        for parent in _ancestors(path):
            if parent not in made:
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        args += [mode, path, path]
        made.add(path)
    args += ["--proc", "/proc", "--dev", "/dev", "--clearenv"]
    for key, value in (env or {}).items():
        args += ["--setenv", key, value]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    args += ["--"]
    if root:
        setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
        args += [setpriv, "--reuid", str(user), "--regid", str(user),
                 "--clear-groups", "--inh-caps=-all", "--"]
    return args + command


def prepare(writable: str, user: int | None) -> None:
    """Give the sandbox's user (``sandbox_user()``) the job's temp dir."""
    if user is not None:
        os.chown(writable, user, user)


@functools.lru_cache(maxsize=1)
def available() -> str:
    """Why no boundary can be made here, or ``""`` when one can (checked once, by running
    Python under it)."""
    if _bwrap() is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    import tempfile

    probe = tempfile.mkdtemp(prefix="compoenv-boundary-")
    try:
        user = sandbox_user()
        prepare(probe, user)
        mark = os.path.join(probe, "ok")
        command = wrap([sys.executable, "-I", "-c", f"open({mark!r}, 'w').close()"],
                       writable=probe, readable=[sys.prefix, sys.base_prefix], user=user)
        done = subprocess.run(command, cwd="/", capture_output=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin"})
        if done.returncode != 0 or not os.path.exists(mark):
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            last = why[-1][:200] if why else f"exit status {done.returncode}"
            return f"bubblewrap fails here: {last}"
        return ""
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap fails here: {exc}"
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def required(unsafe: bool) -> bool:
    """Whether the boundary is used: True where it can be made; False where it cannot and
    ``unsafe`` allows running without it.

    Raises:
        SandboxUnavailable: it cannot be made here and ``unsafe`` is not set.
    """
    why = available()
    if why and not unsafe:
        raise SandboxUnavailable(f"no sandbox for model-written code: {why}; install "
                                 f"bubblewrap, or pass --unsafe to run it without one")
    return not why


def namespace_of(info_fd: int, timeout_s: float = 10.0) -> int | None:
    """The PID namespace (its inode) of the sandbox whose bubblewrap writes to ``info_fd``,
    or None when it ended before it could be seen. The caller closes ``info_fd`` once the
    sandbox has ended (bubblewrap may write to it until then)."""
    import json
    import select
    import time

    text, deadline = "", time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([info_fd], [], [], deadline - time.monotonic())
            chunk = os.read(info_fd, 4096).decode("utf-8", "replace") if ready else ""
            if not chunk:
                return None
            text += chunk
            try:
                child = int(json.loads(text)["child-pid"])
            except ValueError:
                continue  # not all of it yet
            return os.stat(f"/proc/{child}/ns/pid").st_ino
    except (OSError, KeyError, TypeError):
        return None
    return None


def wait_until_empty(namespace: int | None, timeout_s: float = 5.0) -> None:
    """Wait until no process of the PID namespace ``namespace`` is left: its init's death
    has the kernel kill them all, and this returns once they are gone."""
    import time

    if namespace is None:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(_in_namespace(entry, namespace) for entry in os.listdir("/proc")
                   if entry.isdigit()):
            return
        time.sleep(0.02)


def _in_namespace(pid: str, namespace: int) -> bool:
    """Whether process ``pid`` runs in ``namespace`` (a zombie runs nothing: it only waits to
    be reaped by whoever inherited it)."""
    try:
        if os.stat(f"/proc/{pid}/ns/pid").st_ino != namespace:
            return False
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
