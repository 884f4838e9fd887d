"""`load_json`: a request body parsed as JSON, its nesting bounded before the parser sees it.

Python's `json` parser recurses once per nested array or object, so a body of a few hundred
thousand `[` ends in a `RecursionError` deep in the parser. The depth is measured first, in time
linear in the body's size and with the byte loops in C: strings are cut out with one regular
expression (an unterminated one runs to the end, where the parser would stop too), the
brackets left are counted as +1/-1 and the running sum's maximum is the depth. Strings are
cut out only when the body has more opening brackets than the limit.
Imports nothing of ours but the error root.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from engine.errors import CEPError

# a string, possessive so a long one never backtracks; `\Z` ends an unterminated one
_STRING = re.compile(rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


class JsonBodyError(CEPError):
    """A request body that is not JSON, or nests deeper than allowed; the message says which."""


def _bracket_depth(text: bytes) -> int:
    brackets = text.translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)


def json_depth(raw: bytes, at_most: int | None = None) -> int:
    """How deeply arrays and objects nest in `raw` (0 for a scalar), for JSON in UTF-8.

    For a body that is not JSON the count is of the brackets the parser would get to. With
    `at_most`, any depth up to it may be answered with an upper bound that does not exceed it.
    """
    if b'"' not in raw:
        return _bracket_depth(raw)
    openers = raw.count(b"[") + raw.count(b"{")  # nothing nests deeper than this
    if at_most is not None and openers <= at_most:
        return openers
    return _bracket_depth(_STRING.sub(b"", raw))


def load_json(raw: bytes, max_depth: int) -> Any:
    """The JSON value in `raw` (UTF-8, -16 or -32, as `json.loads` accepts)."""
    try:
        encoding = json.detect_encoding(raw)
        utf8 = raw if encoding.startswith("utf-8") else raw.decode(encoding).encode("utf-8")
    except UnicodeError as exc:
        msg = f"the body is not JSON: {exc}"
        raise JsonBodyError(msg) from None
    depth = json_depth(utf8, max_depth)
    if depth > max_depth:
        msg = (
            f"the body nests arrays and objects {depth} deep; the limit is {max_depth} (http.max_json_depth)"
        )
        raise JsonBodyError(msg)
    try:
        return json.loads(utf8)
    except ValueError as exc:
        msg = f"the body is not JSON: {exc}"
        raise JsonBodyError(msg) from None
