from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

from app.persistence.input_log import Events, InputLog, Tick

CHILD = textwrap.dedent(
    """
    import sys
    from app.persistence.input_log import Events, InputLog, Tick

    log = InputLog(sys.argv[1], "always", segment_bytes=4096)
    i = 0
    while True:
        i += 1
        position = log.append("p", Events("S", [i], [(i, "x" * (i % 50), i / 3)]))
        print(position, i, flush=True)
    """
)


def test_every_append_reported_done_survives_sigkill_mid_append(tmp_path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert child.stdout is not None
    reported: list[tuple[int, int]] = []
    try:
        for line in child.stdout:
            position, i = map(int, line.split())
            reported.append((position, i))
            if len(reported) == 300:
                child.send_signal(signal.SIGKILL)
                break
        reported += [tuple(map(int, line.split())) for line in child.stdout]  # type: ignore[misc]
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    with InputLog(tmp_path, "always") as log:
        kept = dict(log.read("p"))
        for position, i in reported:
            assert kept[position] == Events("S", [i], [(i, "x" * (i % 50), i / 3)])
        assert sorted(kept) == list(range(1, len(kept) + 1))
        assert log.append("p", Tick(0)) == len(kept) + 1
