"""Files and directories only the node's user may read: directories 0700, files 0600.

The node's data dir holds the registry (password hashes), the TLS key and, later, snapshots.
What Cepheus creates there is private from its creation on, before anything is written to it;
what an operator made keeps the mode the operator gave it. `cepheus server` also runs under
`PRIVATE_UMASK`, so files that libraries create for it (SQLite's -wal/-shm files, databases of
RDBMS output adapters) are private too. Imports nothing of ours.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PRIVATE_UMASK = 0o077


def private_dir(path: str | Path) -> Path:
    """`path` as a directory, created 0700 (missing parents as the umask says) unless it exists."""
    directory = Path(path)
    directory.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    return directory


def private_file(path: str | Path) -> bool:
    """Create `path` empty with mode 0600 unless it exists; whether it was created."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return False
    os.close(fd)
    return True
