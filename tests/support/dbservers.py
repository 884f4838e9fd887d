"""A MariaDB or PostgreSQL server of a test's own, for fault tests that must hurt the database:
kill -9 it and start it again (crash recovery), pause it (SIGSTOP: connections hang, nothing is
refused), stop it. The machine's shared servers (3306, 5432) serve every other test and are
never touched.

`own_server(kind, workdir)` yields a started server on a free port of `host` (`url` is its
SQLAlchemy URL, database `test`, no password) and stops it on exit. With `prefix` (e.g.
`["ip", "netns", "exec", "ns1"]`) the server runs inside a network namespace the caller made;
readiness is then probed over TCP from the caller's namespace. The prefix and `setpriv` exec, so
the process started is the server itself.

A data directory is initialised once per process (a template, ~1 s) and copied for each server.
PostgreSQL refuses to run as root: when we are root it runs as the `postgres` user (`nobody`
without one), and its data directory lives under this module's temporary directory rather than
in `workdir` (pytest's temporary directories are private to root), linked as `workdir/data`.
"""

from __future__ import annotations

import atexit
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

MARIADBD = "/usr/sbin/mariadbd"
MARIADB_INSTALL_DB = "/usr/bin/mariadb-install-db"
POSTGRES = "/usr/local/bin/postgres"
INITDB = "/usr/local/bin/initdb"

_MARIADB_SETTINGS = [
    "--skip-log-bin",
    "--skip-name-resolve",
    "--innodb-buffer-pool-size=16M",
    "--innodb-log-file-size=8M",
    "--performance-schema=OFF",
]
_MARIADB_TEMPLATE_SQL = """\
FLUSH PRIVILEGES;
CREATE USER 'root'@'%';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;
CREATE DATABASE test;
"""
_POSTGRES_HBA = "host all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n"
_LOG_TAIL = 60  # lines of the server's log in a failure message

_lock = threading.Lock()
_base: Path | None = None
_templates: dict[str, Path] = {}
_running: set[OwnServer] = set()


def _base_dir() -> Path:
    """This process's directory for templates and PostgreSQL data: traversable by the `postgres`
    user, removed at exit (after the servers still running are killed)."""
    global _base
    if _base is None:
        _base = Path(tempfile.mkdtemp(prefix="cepheus-dbservers-"))
        _base.chmod(0o711)
        atexit.register(_cleanup, _base)
    return _base


def _cleanup(base: Path) -> None:
    for server in list(_running):
        server.kill()
    shutil.rmtree(base, ignore_errors=True)


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            return int(sock.getsockname()[1])
    except OSError:  # an address of another network namespace
        return random.randint(20000, 30000)


def _tail(text: str) -> str:
    return "\n".join(text.splitlines()[-_LOG_TAIL:])


def _run(command: Sequence[str], what: str, stdin: str | None = None) -> None:
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{what} failed ({done.returncode}):\n{_tail(done.stdout + done.stderr)}")


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path("/proc", str(pid), "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _signal(pids: Sequence[int], signum: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _pg_account() -> pwd.struct_passwd | None:
    """The account PostgreSQL runs as, or None to run it as ourselves (we are not root)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        return pwd.getpwnam("nobody")


def _as_pg(account: pwd.struct_passwd | None) -> list[str]:
    if account is None:
        return []
    return ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups"]


def _chown_tree(root: Path, account: pwd.struct_passwd | None) -> None:
    if account is None:
        return
    os.chown(root, account.pw_uid, account.pw_gid)
    for directory, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(directory, name), account.pw_uid, account.pw_gid, follow_symlinks=False)


def _template(kind: str) -> Path:
    with _lock:
        if kind not in _templates:
            path = _base_dir() / f"template-{kind}"
            if kind == "mariadb":
                _init_mariadb(path)
            else:
                _init_postgres(path)
            _templates[kind] = path
        return _templates[kind]


def _init_mariadb(path: Path) -> None:
    extra = path.with_suffix(".sql")
    extra.write_text(_MARIADB_TEMPLATE_SQL)
    _run(
        [
            MARIADB_INSTALL_DB,
            "--no-defaults",
            f"--datadir={path}",
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            f"--extra-file={extra}",
            *_MARIADB_SETTINGS,
        ],
        "mariadb-install-db",
    )


def _init_postgres(path: Path) -> None:
    account = _pg_account()
    path.mkdir(mode=0o700)
    _chown_tree(path, account)
    as_pg = _as_pg(account)
    _run(
        [
            *as_pg,
            INITDB,
            "-D",
            str(path),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ],
        "initdb",
    )
    _run(
        [*as_pg, POSTGRES, "--single", "-D", str(path), "postgres"],
        "CREATE DATABASE test",
        "CREATE DATABASE test;\n",
    )
    with (path / "pg_hba.conf").open("a") as hba:
        hba.write(_POSTGRES_HBA)


class OwnServer:
    """A database server of one test's own; see the module's docstring."""

    kind = ""

    def __init__(
        self, workdir: Path, host: str = "127.0.0.1", port: int | None = None, prefix: Sequence[str] = ()
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.host = host
        self.port = port if port is not None else _free_port(host)
        self.prefix = list(prefix)
        self.url = self._url().render_as_string(hide_password=False)
        self.datadir = self.workdir / "data"
        self.logfile = self.workdir / f"{self.kind}.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._probe_engine = sa.create_engine(
            self._url(), poolclass=NullPool, connect_args=self._connect_args()
        )

    # ---- per kind -------------------------------------------------------------------------------

    def _url(self) -> URL:
        raise NotImplementedError

    def _connect_args(self) -> dict[str, int]:
        raise NotImplementedError

    def _create_datadir(self, template: Path) -> None:
        shutil.copytree(template, self.datadir, symlinks=True)

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _stop_signal(self) -> signal.Signals:
        return signal.SIGTERM

    def _after_kill(self) -> None:
        pass

    # ---- life -----------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        if self._process is None or self._process.poll() is not None:
            return None
        return self._process.pid

    def start(self, timeout: float = 30.0) -> None:
        """Start the server (again, after `kill` or `stop`: on the same data) and wait until it
        accepts a connection to database `test`; a no-op but for the wait if it runs."""
        started = time.monotonic()
        if self.pid is None:
            if not self.datadir.exists():
                self._create_datadir(_template(self.kind))
            with self.logfile.open("ab") as log:
                self._process = subprocess.Popen(
                    [*self.prefix, *self._command()],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            _running.add(self)
        assert self._process is not None
        deadline = started + timeout
        while True:
            code = self._process.poll()
            if code is not None:
                _running.discard(self)
                raise AssertionError(
                    f"{self.kind} on {self.host}:{self.port} exited ({code}):\n{_tail(self.log())}"
                )
            if self._answers():
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.kind} on {self.host}:{self.port} not ready after {timeout:.0f} s:\n{_tail(self.log())}"
                )
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            with self._probe_engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
            return True
        except sa.exc.DBAPIError:
            return False

    def _processes(self) -> list[int]:
        """The server's process, stopped (SIGSTOP: it forks no more), and its descendants."""
        assert self._process is not None
        os.kill(self._process.pid, signal.SIGSTOP)
        return [self._process.pid, *_descendants(self._process.pid)]

    def kill(self) -> None:
        """SIGKILL the server (every process of it) and wait until they are gone."""
        if self.pid is None:
            return
        assert self._process is not None
        pids = self._processes()
        _signal(pids, signal.SIGKILL)
        self._process.wait()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids[1:]) and time.monotonic() < deadline:
            time.sleep(0.02)
        _running.discard(self)
        self._after_kill()

    def pause(self) -> None:
        """SIGSTOP the server: connections are accepted by the kernel and then wait, as do queries."""
        if self.pid is not None:
            _signal(self._processes()[1:], signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT (after `pause`)."""
        if self._process is not None and self.pid is not None:
            _signal([*_descendants(self._process.pid), self._process.pid], signal.SIGCONT)

    def stop(self, timeout: float = 15.0) -> None:
        """Shut the server down in order (killed if it takes longer than `timeout`); idempotent."""
        if self.pid is None:
            _running.discard(self)
            return
        assert self._process is not None
        self.resume()
        self._process.send_signal(self._stop_signal())
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        _running.discard(self)

    def log(self) -> str:
        """The server's own log (every start of it), for failure messages."""
        try:
            return self.logfile.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _discard(self) -> None:
        """Free what the server leaves outside `workdir` (it has stopped)."""
        self._probe_engine.dispose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.host}:{self.port} pid={self.pid}>"


class OwnMariaDB(OwnServer):
    """mariadbd as root, with grant tables: root without a password from any address."""

    kind = "mariadb"

    def _url(self) -> URL:
        return URL.create("mysql+pymysql", username="root", host=self.host, port=self.port, database="test")

    def _connect_args(self) -> dict[str, int]:
        return {"connect_timeout": 1, "read_timeout": 2, "write_timeout": 2}

    def _command(self) -> list[str]:
        socket_path = self.workdir / "mariadbd.sock"
        if len(str(socket_path)) > 100:  # sun_path holds 108 bytes
            socket_path = _base_dir() / f"mariadbd-{uuid.uuid4().hex[:12]}.sock"
        return [
            MARIADBD,
            "--no-defaults",
            f"--datadir={self.datadir}",
            "--user=root",
            f"--bind-address={self.host}",
            f"--port={self.port}",
            f"--socket={socket_path}",
            f"--pid-file={self.workdir / 'mariadbd.pid'}",
            *_MARIADB_SETTINGS,
        ]


class OwnPostgres(OwnServer):
    """postgres as the `postgres` user, trusting every TCP client; a fast shutdown on `stop`."""

    kind = "postgres"

    def __init__(
        self, workdir: Path, host: str = "127.0.0.1", port: int | None = None, prefix: Sequence[str] = ()
    ) -> None:
        super().__init__(workdir, host, port, prefix)
        self._account = _pg_account()
        if self._account is not None:
            self.datadir = _base_dir() / f"postgres-{uuid.uuid4().hex[:12]}"

    def _url(self) -> URL:
        return URL.create(
            "postgresql+psycopg2", username="postgres", host=self.host, port=self.port, database="test"
        )

    def _connect_args(self) -> dict[str, int]:
        return {"connect_timeout": 1}

    def _create_datadir(self, template: Path) -> None:
        super()._create_datadir(template)
        _chown_tree(self.datadir, self._account)
        link = self.workdir / "data"
        if link.is_symlink():
            link.unlink()
        if not link.exists():
            link.symlink_to(self.datadir)

    def _command(self) -> list[str]:
        return [
            *_as_pg(self._account),
            POSTGRES,
            "-D",
            str(self.datadir),
            "-p",
            str(self.port),
            "-c",
            f"listen_addresses={self.host}",
            "-c",
            f"unix_socket_directories={self.datadir}",
            "-c",
            "shared_buffers=16MB",
            "-c",
            "max_connections=1000",
        ]

    def _stop_signal(self) -> signal.Signals:
        return signal.SIGINT  # fast shutdown: SIGTERM would wait for every client to disconnect

    def _after_kill(self) -> None:
        # every process of the server is gone: a stale postmaster.pid whose pid has meanwhile been
        # reused would make the next start refuse ("lock file already exists")
        (self.datadir / "postmaster.pid").unlink(missing_ok=True)

    def _discard(self) -> None:
        super()._discard()
        link = self.workdir / "data"
        if self.datadir != link:
            shutil.rmtree(self.datadir, ignore_errors=True)
            link.unlink(missing_ok=True)


_KINDS: dict[str, type[OwnServer]] = {
    "mariadb": OwnMariaDB,
    "mysql": OwnMariaDB,
    "postgres": OwnPostgres,
    "postgresql": OwnPostgres,
}


@contextmanager
def own_server(
    kind: str,
    workdir: Path | str,
    host: str = "127.0.0.1",
    port: int | None = None,
    prefix: Sequence[str] = (),
) -> Iterator[OwnServer]:
    """A started server of `kind` ("mariadb"/"mysql" or "postgres"/"postgresql"), stopped on exit
    (killed if it does not stop in time), even when the test fails."""
    server = _KINDS[kind](Path(workdir), host, port, prefix)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        server._discard()
