"""A throwaway PostgreSQL server on 127.0.0.1 for the tests (Debian's postgresql package).

`bash .ci/run` installs the package; the tests start their own server in a temporary folder, with
a password (so tests can check it never leaks), and stop it when the session ends.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

PASSWORD = "pg-test-secret-4f9c2a"
USER = "phasegraph"


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if not found:
        raise RuntimeError(
            "PostgreSQL server programs not found (no /usr/lib/postgresql/*/bin/initdb): "
            "install Debian's postgresql package, as `bash .ci/run` does"
        )
    return Path(found[-1]).parent


def _version(path: str) -> int:
    return int(Path(path).parts[-3])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """initdb, pg_ctl start and stop; as root, the server runs as the postgres user."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="phasegraph-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user: str | None = "postgres" if os.geteuid() == 0 else None

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            user=self.user,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {done.stdout}\n{done.stderr}")

    def start(self) -> PostgresServer:
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD, encoding="utf-8")
        if self.user:
            entry = pwd.getpwnam(self.user)
            for path in (self.root, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--no-sync",
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories='' "
            "-c max_connections=300 -c fsync=off"
        )
        # -l: the server's output goes to a file, not to the pipe this process waits on
        log = str(self.root / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "start")
        return self

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.url(), autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {name}")
                return self.url(name)
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
