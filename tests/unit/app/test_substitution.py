from __future__ import annotations

import pytest

from app.registry.substitution import SubstitutionError, check_references, resolvable, substitute

ENV = {"DB": "mysql+pymysql://u:pw@h/db", "EMPTY": ""}


def test_references_are_expanded_everywhere_in_the_document() -> None:
    doc = {
        "datasources": [{"name": "x", "url": "${DB}", "options": {"note": "cost $$5 ${MISSING:-none}"}}],
        "n": 3,
    }
    assert substitute(doc, ENV) == {
        "datasources": [
            {"name": "x", "url": "mysql+pymysql://u:pw@h/db", "options": {"note": "cost $5 none"}}
        ],
        "n": 3,
    }


def test_an_empty_variable_takes_the_default() -> None:
    assert substitute("${EMPTY:-fallback}", ENV) == "fallback"
    assert substitute("${EMPTY:-}", ENV) == ""


def test_an_unset_variable_without_default_names_variable_and_key() -> None:
    with pytest.raises(SubstitutionError) as exc:
        substitute({"datasources": [{"url": "${PIZZA_URL}"}]}, ENV)
    assert str(exc.value).startswith("datasources[0].url: environment variable PIZZA_URL is not set")


@pytest.mark.parametrize("text", ["${}", "${1A}", "${OPEN", "${A-b}"])
def test_malformed_references_are_errors(text: str) -> None:
    with pytest.raises(SubstitutionError, match="is not a variable reference"):
        substitute(text, ENV)


def test_text_without_references_is_untouched() -> None:
    assert substitute("from S[price > 5] select * insert into T; -- $ sign", ENV) == (
        "from S[price > 5] select * insert into T; -- $ sign"
    )


def test_checking_references_needs_no_environment_and_expands_nothing() -> None:
    check_references({"url": "mysql://u:${PASSWORD}@h/db", "n": ["$$", "${X:-y}"]})
    with pytest.raises(SubstitutionError, match=r"config\.url: '\$\{OPEN' is not a variable reference"):
        check_references({"url": "${OPEN"}, "config")


def test_resolvable_is_none_when_a_variable_is_missing() -> None:
    assert resolvable("mysql://u:${PW}@h/db", {"PW": "x"}) == "mysql://u:x@h/db"
    assert resolvable("mysql://u:${PW}@h/db", {}) is None
    assert resolvable("${PW:-none}", {}) == "none"
