"""Where one stream's values lie in a bundle's five typed lists (PROTOCOL §6).

A `Layout` is computed once per stream definition and cached: the type code of every
attribute by section, and for the column-wise fast paths, each attribute's list and its
offset within one event's share of that list. Imports only `definitions`.
"""

from __future__ import annotations

from functools import lru_cache

from adapters.thrift.definitions import WireStreamDefinition

INT, LONG, FLOAT, DOUBLE, BOOL, STRING = range(6)
CODES = {"INT": INT, "LONG": LONG, "FLOAT": FLOAT, "DOUBLE": DOUBLE, "BOOL": BOOL, "STRING": STRING}
SLOT = (INT, LONG, DOUBLE, DOUBLE, BOOL, STRING)
LIST_NAMES = (
    "intAttributeList",
    "longAttributeList",
    "doubleAttributeList",
    "doubleAttributeList",
    "boolAttributeList",
    "stringAttributeList",
)


class Layout:
    """`sections`: type codes of meta, correlation, payload; `columns`: (slot, offset) of each
    attribute; `counts`: values per event in the INT, LONG, DOUBLE, BOOL, STRING lists (the
    timestamp and the stream id not included)."""

    __slots__ = ("sections", "columns", "counts")

    def __init__(self, definition: WireStreamDefinition) -> None:
        self.sections = tuple(
            tuple(CODES[kind] for _name, kind in attrs)
            for attrs in (definition.meta, definition.correlation, definition.payload)
        )
        per_slot = [0] * 6
        columns = []
        for codes in self.sections:
            section = []
            for code in codes:
                slot = SLOT[code]
                section.append((slot, per_slot[slot]))
                per_slot[slot] += 1
            columns.append(tuple(section))
        self.columns = tuple(columns)
        self.counts = (per_slot[INT], per_slot[LONG], per_slot[DOUBLE], per_slot[BOOL], per_slot[STRING])


@lru_cache(maxsize=4096)
def layout(definition: WireStreamDefinition) -> Layout:
    return Layout(definition)
