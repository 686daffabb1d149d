"""A Python worker daemon started beside the driver JVM instead of after it, on a local master.

PySpark starts its worker daemon the first time a task needs Python: after the JVM is up and
the first job has begun, and a daemon that imports what its workers need (pyarrow, PySpark's
worker, this package's scan and parse plans: ``logparse.worker_daemon``) makes every session's
first job wait for those imports. The JVM's own start leaves a core idle for about two seconds,
so ``build_session`` starts a *standby* there: a process that makes the same imports, then waits.

When the JVM runs the daemon module (``python -m <module>``), that process, before importing
anything heavy, asks the standby to take its place (``hand_over``): it passes its standard input,
output and error (the JVM's pipes), its arguments, working folder and environment (the JVM's
secret for its workers among them) over a Unix socket. The standby adopts them and runs PySpark's
daemon loop; the process the JVM started waits for it to end, and passes on the JVM's request to
stop. The standby serves one daemon start; any later one (or one it refuses) starts as before.

It refuses when the interpreter differs, or one of the interpreter's own start-up variables
(``PYTHONHASHSEED``, ``PYTHONUNBUFFERED``, ...: set once, when Python starts) differs from what
the JVM gave the daemon: the workers it forks must be what a daemon the JVM started would fork.
An unused standby ends with the driver (``Standby.stop``, or when its parent is gone)."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import sys

TYPE_CHECKING = False  # as the package's own ``__init__``: no typing for the daemon's start
if TYPE_CHECKING:
    import subprocess

# The variable (a Unix socket's path) that tells a daemon module where its standby waits; given
# to the daemon through ``spark.executorEnv`` (the JVM passes it on to the daemon's environment).
STANDBY_ENV = "KAFKA_REBALANCE_STANDBY_DAEMON"
# A daemon start waits this long for the standby to answer before starting as usual.
HAND_OVER_TIMEOUT_SECONDS = 30.0
PARENT_CHECK_SECONDS = 1.0
# A request to stop is passed on again this often until the standby has ended (``wait_for_end``).
RESEND_SECONDS = 0.5
ACCEPTED = b"ok "
GO = b"go"


class Standby:
    """A standby process waiting on ``socket_path`` (the driver's handle). (A plain class, and
    the driver's modules imported where the driver uses them: the daemon process the JVM starts
    imports this module first thing, and its start is the first job's to wait for.)"""

    def __init__(self, process: subprocess.Popen[bytes], socket_path: str) -> None:
        self.process = process
        self.socket_path = socket_path

    def stop(self) -> None:
        """End it if it never took a daemon's place (a daemon it became ends with the JVM)."""
        import subprocess

        if self.process.poll() is None and os.path.exists(self.socket_path):
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(self.socket_path))


def interpreter_settings(environment: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The variables Python reads once, when it starts (``PYTHONHASHSEED``, ``PYTHONUNBUFFERED``,
    ...; not ``PYTHONPATH``, which only sets the first ``sys.path``, nor Spark's ``PYTHON_*``)."""
    return {name: value for name, value in environment.items()
            if name.startswith("PYTHON") and name[6:].isalpha() and name != "PYTHONPATH"}


def start_standby(daemon_module: str, daemon_settings: dict[str, str]) -> Standby | None:
    """Start a standby for ``daemon_module`` (which has ``warm(ahead)`` and ``serve()``), with the
    interpreter settings ``daemon_settings`` that the JVM will give its daemon. None where
    this platform cannot hand processes over (no ``pidfd_open`` or Unix sockets)."""
    import atexit
    import subprocess
    import tempfile

    if not hasattr(os, "pidfd_open") or not hasattr(socket, "send_fds"):
        return None
    folder = tempfile.mkdtemp(prefix="kafka-rebalance-standby-")  # this user's alone
    path = os.path.join(folder, "daemon.sock")
    environment = {name: value for name, value in os.environ.items() if name not in interpreter_settings(os.environ)}
    environment.update(daemon_settings)
    # Listening before the standby runs: a daemon start that comes before it is ready waits.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(4)
        process = subprocess.Popen([sys.executable, "-m", __name__, daemon_module, path, str(listener.fileno())],
                                   env=environment, pass_fds=[listener.fileno()], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    standby = Standby(process, path)
    atexit.register(standby.stop)
    return standby


# --------------------------------------------------------------------------- the daemon's side

def hand_over() -> bool:
    """In a daemon process the JVM started: let the standby named in ``STANDBY_ENV`` take this
    process's place. True once it has, and ended (this process then only has to exit); False
    where there is none, or it refused or failed (this process then starts as usual)."""
    path = os.environ.get(STANDBY_ENV)
    if not path or not hasattr(os, "pidfd_open"):
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(HAND_OVER_TIMEOUT_SECONDS)
            connection.connect(path)
            request = {"argv": sys.argv, "executable": sys.executable, "cwd": os.getcwd(), "env": dict(os.environ)}
            socket.send_fds(connection, [json.dumps(request).encode()], [0, 1, 2])
            answer = connection.recv(64)
            if not answer.startswith(ACCEPTED):
                return False
            # Committed from here: the standby adopts this process's pipes once it has the word.
            # The JVM's SIGTERM waits until it can be passed on (``wait_for_end``).
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            connection.sendall(GO)
    except OSError:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        return False
    wait_for_end(int(answer[len(ACCEPTED):]))
    return True


def wait_for_end(pid: int) -> None:
    """Block until process ``pid`` ends, passing on a request to stop (the JVM's SIGTERM) until
    it has.

    Passed on once, it can be lost: PySpark's daemon stops in its SIGTERM handler by raising
    ``SystemExit``, after putting SIGTERM's default action back; when the handler runs inside
    an at-fork callback (logging's, as the daemon forks a worker), Python only prints the
    exception and the daemon goes on serving. So the request is passed on again every
    ``RESEND_SECONDS`` until the process ends: the default action ends it then."""
    stopping = False

    def pass_on(signal_number: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        with contextlib.suppress(OSError):
            os.kill(pid, signal_number)

    signal.signal(signal.SIGTERM, pass_on)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # one that came meanwhile: passed on now
    try:
        handle = os.pidfd_open(pid)
    except OSError:
        return  # already gone
    with os.fdopen(handle, "rb", buffering=0):
        while True:
            try:
                # A timeout, not a wait without end: a signal handler does not end the wait.
                readable, _, _ = select.select([handle], [], [], RESEND_SECONDS)
            except InterruptedError:
                continue
            if readable:
                return
            if stopping:
                pass_on(signal.SIGTERM, None)


# --------------------------------------------------------------------------- the standby's side

def _adopt(module_name: str, path: str, listening: int) -> None:
    """The standby: warm the daemon module, wait for a daemon start to hand over, adopt it, serve.
    ``listening``: the socket at ``path`` the driver opened for it."""
    parent = os.getppid()
    listener = socket.socket(fileno=listening)
    module = importlib.import_module(module_name)
    module.warm(ahead=True)
    while True:
        readable, _, _ = select.select([listener], [], [], PARENT_CHECK_SECONDS)
        if not readable:
            if os.getppid() != parent:
                return  # the driver is gone, and nothing asked for us
            continue
        connection, _ = listener.accept()
        with connection:
            message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
            request = json.loads(message)
            reason = _refusal(request, len(fds))
            if reason is not None:
                connection.sendall(b"no: " + reason.encode())
                for fd in fds:
                    os.close(fd)
                continue
            try:
                connection.sendall(ACCEPTED + str(os.getpid()).encode())
                committed = connection.recv(len(GO)) == GO
            except OSError:
                committed = False
            if not committed:  # the daemon's start gave up waiting, and starts as usual
                for fd in fds:
                    os.close(fd)
                continue
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            os.environ.clear()
            os.environ.update(request["env"])
            os.chdir(request["cwd"])
            sys.argv = request["argv"]
            sys.path.extend(entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                            if entry and entry not in sys.path)
        listener.close()
        os.unlink(path)
        module.serve()
        return


def _refusal(request: dict[str, object], fds: int) -> str | None:
    """Why the standby cannot be the daemon asked for (None: it can)."""
    environment = request.get("env")
    if fds != 3 or not isinstance(environment, dict):
        return "not a daemon's start"
    if request.get("executable") != sys.executable:
        return "another interpreter"
    if interpreter_settings(environment) != interpreter_settings(os.environ):
        return "other interpreter settings"
    return None


if __name__ == "__main__":
    _adopt(sys.argv[1], sys.argv[2], int(sys.argv[3]))
