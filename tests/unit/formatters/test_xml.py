"""The xml formatter: escaped elements, configurable names, nulls and odd values."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from engine.events import Event
from engine.types import AttrType
from formatters import FormatterConfigError, build_formatter

ATTRS = [("customerName", AttrType.STRING), ("sumOrderId", AttrType.LONG), ("ok", AttrType.BOOL)]


def test_one_escaped_element_per_attribute() -> None:
    fmt = build_formatter("xml", ATTRS)
    out = fmt.format([Event(1, ("Tom & <Jerry>", 2, True))])
    assert out == [
        "<events><event><customerName>Tom &amp; &lt;Jerry&gt;</customerName>"
        "<sumOrderId>2</sumOrderId><ok>true</ok></event></events>"
    ]
    assert ET.fromstring(out[0]).findtext("event/customerName") == "Tom & <Jerry>"


def test_root_element_and_field_names_are_configurable() -> None:
    fmt = build_formatter("xml", ATTRS, {"root": "", "element": "order", "fields": {"sumOrderId": "count"}})
    assert fmt.format([Event(1, ("Tom", 2, False))]) == ["<order><count>2</count></order>"]


def test_null_and_characters_xml_cannot_hold() -> None:
    fmt = build_formatter("xml", [("a", AttrType.STRING), ("b", AttrType.DOUBLE)])
    out = fmt.format([Event(1, (None, float("-inf"))), Event(2, ("bell\x07", 1.5))])
    assert out[0] == '<events><event><a null="true"/><b>-INF</b></event></events>'
    assert ET.fromstring(out[1]).findtext("event/a") == "bell\ufffd"


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"root": "a b"}, "root"),
        ({"element": "<x>"}, "element"),
        ({"element": ""}, "element"),
        ({"fields": {"ok": "1bad"}}, "fields.ok"),
        ({"fields": {"missing": "x"}}, "fields.missing"),
        ({"indent": 2}, "indent"),
    ],
)
def test_config_errors_name_the_key(config: dict[str, object], key: str) -> None:
    with pytest.raises(FormatterConfigError) as info:
        build_formatter("xml", ATTRS, config)
    assert info.value.key == key
