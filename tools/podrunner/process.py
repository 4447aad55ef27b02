"""One container as a local process.

``launch_argv`` wraps the program's argv: into the pod's network namespace (own stack), and into
a private mount namespace where its volumes appear at their ``mountPath`` (see ``MountPlan``).
``ContainerProcess`` starts it in a process group of its own, writes its output to a log file in
the CRI format the kubelet keeps (``<RFC 3339 time> stdout F <line>``, what ``kubectl logs``
serves), reports its exit, and stops it with SIGTERM, then SIGKILL after the grace period.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from tools.podrunner.network import wrap_netns

log = logging.getLogger(__name__)


@dataclass
class Mount:
    mount_path: str  # inside the "container"
    host_path: str   # the volume directory (or a file/directory in it, for subPath)
    read_only: bool = False


@dataclass
class MountPlan:
    """How a container sees its volumes without a container runtime or a root file system of
    its own.

    - A mountPath under ``/run`` (``/var/run``), such as the service-account token directory
      ``/var/run/secrets/kubernetes.io/serviceaccount``, is really mounted: the container gets a
      private mount namespace with a tmpfs on ``/run``, in which the directory is created and the
      volume bind-mounted, so the in-cluster client finds its token where it looks.
    - Every other mountPath (``/etc/titanium``, ``/etc/secret-volume``, ``/root``, ``/tmp``) is
      reached through path translation (``translate``): env values, arguments and the working
      directory that name a path under a mountPath name the volume's host directory instead.
      (Mounting over host directories that exist, such as ``/root`` or ``/tmp``, would hide what
      the local programs themselves need.)
    """

    mounts: list[Mount] = field(default_factory=list)

    def translate(self, value: str) -> str:
        best: Mount | None = None
        for m in self.mounts:
            mp = m.mount_path.rstrip("/") or "/"
            if (value == mp or value.startswith(mp + "/")) and (best is None or len(mp) > len(best.mount_path)):
                best = m
        if best is None:
            return value
        return best.host_path + value[len(best.mount_path.rstrip("/")):]

    def script(self) -> str:
        """The shell lines that set up the real mounts ("" when none is needed)."""
        lines: list[str] = []
        for m in sorted(self.mounts, key=lambda m: m.mount_path):
            mp = m.mount_path
            if not (mp == "/run" or mp.startswith("/run/") or mp.startswith("/var/run/")):
                continue
            if not lines:
                lines.append("mount -t tmpfs -o mode=0755,size=16m podrunner-run /run")
            lines.append(f"mkdir -p {shlex.quote(mp)}")
            lines.append(f"mount --bind {shlex.quote(m.host_path)} {shlex.quote(mp)}")
            if m.read_only:
                lines.append(f"mount -o remount,bind,ro {shlex.quote(mp)}")
        return "\n".join(lines)


def launch_argv(argv: Sequence[str], netns: str | None, plan: MountPlan | None) -> list[str]:
    script = plan.script() if plan else ""
    inner = list(argv)
    if script:
        inner = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-ec",
                 script + '\nexec "$@"', "podrunner-mounts", *argv]
    return wrap_netns(netns, inner)


def cri_time(t: float | None = None) -> str:
    dt = datetime.fromtimestamp(time.time() if t is None else t, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond:06d}000Z"


def rfc3339(t: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if t is None else t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Exit:
    code: int
    signal: int | None
    started: float
    finished: float


class ContainerProcess:
    """See module doc. ``on_exit(exit)`` is called from the log thread once the process ended."""

    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], log_path: str, *,
                 cwd: str | None = None, on_exit: Callable[[Exit], None] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = dict(env)
        self.log_path = log_path
        self.cwd = cwd
        self.on_exit = on_exit
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.exit: Exit | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.exit is None

    def start(self) -> None:
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        self.started = time.time()
        self.proc = subprocess.Popen(  # noqa: S603 - argv from the image map
            self.argv, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self._thread = threading.Thread(target=self._pump, name=f"log-{self.name}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        with open(self.log_path, "ab", buffering=0) as out:
            for line in iter(self.proc.stdout.readline, b""):
                tag = b"F"
                if not line.endswith(b"\n"):
                    tag = b"P"
                else:
                    line = line[:-1]
                out.write(cri_time().encode() + b" stdout " + tag + b" " + line + b"\n")
        code = self.proc.wait()
        sig = -code if code < 0 else None
        self.exit = Exit(code=128 + sig if sig else code, signal=sig, started=self.started, finished=time.time())
        if self.on_exit:
            try:
                self.on_exit(self.exit)
            except Exception:  # noqa: BLE001
                log.exception("container %s: exit handler failed", self.name)

    def signal_group(self, sig: int) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def stop(self, grace: float) -> Exit | None:
        """SIGTERM the process group, SIGKILL after ``grace`` seconds; returns the exit."""
        if self.proc is None:
            return None
        if self.exit is None:
            self.signal_group(signal.SIGTERM)
            try:
                self.proc.wait(timeout=max(grace, 0.0))
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=10)
        else:
            # The main process is gone; make sure nothing it started lingers.
            self.signal_group(signal.SIGKILL)
        if self._thread:
            self._thread.join(timeout=10)
        return self.exit


def read_log(path: str, *, tail_lines: int | None = None, limit_bytes: int | None = None,
             timestamps: bool = False, since: float | None = None) -> bytes:
    """The container log as ``kubectl logs`` shows it (CRI prefix removed unless timestamps)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return b""
    lines = raw.splitlines()
    out: list[bytes] = []
    partial = b""
    for line in lines:
        parts = line.split(b" ", 3)
        if len(parts) < 4:
            continue
        ts, _stream, tag, text = parts
        if since is not None:
            try:
                when = datetime.strptime(ts.decode()[:26] + "Z", "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=timezone.utc).timestamp()
            except ValueError:
                when = 0.0
            if when < since:
                continue
        if tag == b"P":
            partial += text
            continue
        text = partial + text
        partial = b""
        out.append((ts + b" " + text) if timestamps else text)
    if partial:
        out.append(partial)
    if tail_lines is not None:
        out = out[-tail_lines:] if tail_lines > 0 else []
    data = b"".join(line + b"\n" for line in out)
    if limit_bytes is not None:
        data = data[:limit_bytes]
    return data
