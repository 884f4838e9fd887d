"""The text formatter: templates by attribute name, never evaluating anything."""

from __future__ import annotations

import pytest

from engine.errors import FormatError
from engine.events import Event
from engine.types import AttrType
from formatters import FormatterConfigError, build_formatter

ATTRS = [("customerName", AttrType.STRING), ("sumOrderId", AttrType.LONG), ("price", AttrType.DOUBLE)]


def text(template: str, *events: Event) -> list[str]:
    return build_formatter("text", ATTRS, {"template": template}).format(list(events))


def test_placeholders_are_replaced_by_attribute_values() -> None:
    assert text("{customerName} ordered {sumOrderId}", Event(1, ("Tom", 3, 1.0))) == ["Tom ordered 3"]


def test_format_specs_specials_braces_and_nulls() -> None:
    out = text(
        "{{{customerName!r}}} {price:.2f} at {@timestamp} ({@type})", Event(5, (None, 1, 2.5), expired=True)
    )
    assert out == ["{null} 2.50 at 5 (expired)"]


@pytest.mark.parametrize(
    "template",
    [
        "{customerName.__class__}",
        "{customerName[0]}",
        "{__import__('os')}",
        "{0}",
        "{}",
        "{price:{sumOrderId}}",
        "{nope}",
        "{customerName!x}",
        "{price:d}",
        "unbalanced {",
    ],
)
def test_templates_that_reach_beyond_an_attribute_are_refused(template: str) -> None:
    with pytest.raises(FormatterConfigError) as info:
        build_formatter("text", ATTRS, {"template": template})
    assert info.value.key == "template"


def test_template_is_required() -> None:
    with pytest.raises(FormatterConfigError, match="template: is required"):
        build_formatter("text", ATTRS, {})


def test_a_value_its_format_cannot_take_is_a_format_error() -> None:
    fmt = build_formatter("text", [("x", AttrType.OBJECT)], {"template": "{x:.2f}"})
    with pytest.raises(FormatError, match="event 0"):
        fmt.format([Event(1, ("abc",))])
