"""Formatters: events of one stream → records an output adapter sends.

```python
from formatters import build_formatter
fmt = build_formatter("map", [("sumOrderId", AttrType.LONG), ("customerName", AttrType.STRING)],
                      {"mappings": [{"column": "sum_order_id", "attribute": "sumOrderId"},
                                    {"column": "customer_name", "attribute": "customerName"}]})
fmt.format(events)   # -> [{"sum_order_id": 1, "customer_name": "Tom"}, ...]
```

| type | record |
|---|---|
| `map` | `dict` row, column → value (`formatters.mapping`) |
| `json` | JSON text (`formatters.jsontext`) |
| `xml` | XML text (`formatters.xmltext`) |
| `text` | text from a template (`formatters.template`) |
| `wso2event` | `WSO2Event` with meta / correlation / payload (`formatters.wso2event`) |

Config keys are documented in each module and in `docs/adapters.md`. This package imports
only `engine.events`, `engine.errors` and `engine.types`; adapters import it.
"""

from __future__ import annotations

from formatters.base import Attribute, Formatter
from formatters.config import FormatterConfigError, Settings
from formatters.factory import FORMATTER_TYPES, build_formatter
from formatters.jsontext import JsonFormatter
from formatters.mapping import MapFormatter
from formatters.template import TextFormatter
from formatters.wso2event import WSO2Event, WSO2EventFormatter, WSO2StreamDefinition
from formatters.xmltext import XmlFormatter

__all__ = [
    "FORMATTER_TYPES",
    "Attribute",
    "Formatter",
    "FormatterConfigError",
    "JsonFormatter",
    "MapFormatter",
    "Settings",
    "TextFormatter",
    "WSO2Event",
    "WSO2EventFormatter",
    "WSO2StreamDefinition",
    "XmlFormatter",
    "build_formatter",
]
