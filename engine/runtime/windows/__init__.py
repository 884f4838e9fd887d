"""Windows. Importing this package registers every window in `REGISTRY`."""

from engine.runtime.windows import (  # noqa: F401  (registers)
    batch,
    cron,
    expression,
    external,
    frequent,
    session,
    sliding,
    sort,
    timed,
    unique,
    unique_batch,
    unique_external,
)
from engine.runtime.windows.base import REGISTRY, Window, WindowContext, WindowSpec

__all__ = ["REGISTRY", "Window", "WindowContext", "WindowSpec"]
