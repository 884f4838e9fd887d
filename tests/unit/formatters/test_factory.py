"""build_formatter: types, attributes, errors that name the key."""

from __future__ import annotations

import pytest

from engine.errors import ConfigError, FormatError
from engine.types import AttrType
from formatters import FORMATTER_TYPES, FormatterConfigError, build_formatter


def test_unknown_type_names_the_known_ones() -> None:
    with pytest.raises(
        FormatterConfigError, match="'yaml' is unknown.*map, json, xml, text, wso2event"
    ) as info:
        build_formatter("yaml", [("a", AttrType.INT)], {})
    assert info.value.key == "type"


def test_config_errors_are_both_format_and_config_errors() -> None:
    with pytest.raises(FormatterConfigError) as info:
        build_formatter("json", [("a", AttrType.INT)], {"envelop": "flat"})
    assert isinstance(info.value, FormatError) and isinstance(info.value, ConfigError)
    assert "envelop: unknown key (known keys: " in str(info.value)


def test_config_must_be_a_table() -> None:
    with pytest.raises(FormatterConfigError, match="must be a table of keys"):
        build_formatter("json", [("a", AttrType.INT)], ["envelope"])  # type: ignore[arg-type]


def test_attribute_types_may_be_given_by_name() -> None:
    fmt = build_formatter("map", [("a", "long"), ("b", AttrType.STRING)], {})
    assert [a.type for a in fmt.attributes] == [AttrType.LONG, AttrType.STRING]


@pytest.mark.parametrize("attributes", [[("a", "blob")], [("a", AttrType.INT), ("a", AttrType.INT)], ["a"]])
def test_malformed_attributes_are_format_errors(attributes: list[object]) -> None:
    with pytest.raises(FormatError):
        build_formatter("map", attributes, {})  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", FORMATTER_TYPES)
def test_every_type_builds_with_its_minimal_config(kind: str) -> None:
    config = {"text": {"template": "{a}"}, "wso2event": {"stream_name": "S"}}.get(kind, {})
    fmt = build_formatter(kind, [("a", AttrType.INT)], config)
    assert fmt.kind == kind
    assert len(fmt.format([])) == 0
