"""`load_json`: nesting is measured before `json.loads` recurses."""

from __future__ import annotations

import json

import pytest

from adapters.http.json_body import JsonBodyError, json_depth, load_json


@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        (b"17", 0),
        (b'"[[["', 0),
        (b"[]", 1),
        (b'[[1, 2], {"a": [3]}]', 3),
        (b'["]]]]]", [[[[]]]]]', 5),  # closing brackets in a string do not hide depth
        (b'["\\"[[[", "\\\\"]', 1),  # escaped quotes and backslashes
        (b'[["unterminated [[[[', 2),  # the parser stops at the open string
    ],
)
def test_depth_counts_brackets_outside_strings(raw: bytes, depth: int) -> None:
    assert json_depth(raw) == depth


def test_body_at_the_limit_is_parsed() -> None:
    assert load_json(b"[[[1]]]", 3) == [[[1]]]


def test_body_past_the_limit_names_depth_limit_and_key() -> None:
    with pytest.raises(JsonBodyError) as info:
        load_json(b'{"a": [[{"b": 1}]]}', 3)
    assert str(info.value) == "the body nests arrays and objects 4 deep; the limit is 3 (http.max_json_depth)"


def test_a_million_brackets_are_refused_not_a_recursion_error() -> None:
    with pytest.raises(JsonBodyError, match="nests arrays and objects 1000000 deep"):
        load_json(b"[" * 1_000_000, 64)


def test_utf16_body_is_measured_after_decoding() -> None:
    assert load_json(json.dumps(["\u5b22"]).encode("utf-16"), 1) == ["\u5b22"]  # U+5B22 holds the byte "["


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{not json", "the body is not JSON: Expecting property name enclosed in double quotes"),
        (b'["\xff"]', "the body is not JSON: 'utf-8' codec can't decode byte 0xff"),
    ],
)
def test_invalid_json_says_why(raw: bytes, message: str) -> None:
    with pytest.raises(JsonBodyError, match=message):
        load_json(raw, 64)
