"""Windows. Importing this package registers every window in `REGISTRY`."""

from engine.runtime.windows import batch, external, sliding  # noqa: F401  (registers)
from engine.runtime.windows.base import REGISTRY, Window, WindowContext, WindowSpec

__all__ = ["REGISTRY", "Window", "WindowContext", "WindowSpec"]
