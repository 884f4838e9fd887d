"""`cepheus publish --url/--auth-url`: a receiver list that is not WSO2's syntax is refused with
the message of `adapters.thrift.endpoints`, before the file is read or anything is contacted."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main

DEFINITION = "{'name':'temps','version':'1.0.0','payloadData':[{'name':'celsius','type':'DOUBLE'}]}"


@pytest.mark.parametrize(
    ("url", "auth_url", "message"),
    [
        (
            "tcp://a:7611,tcp://b:7611|tcp://c:7611",
            None,
            "invalid value for '--url': receiverURL 'tcp://a:7611,tcp://b:7611|tcp://c:7611' mixes ',' "
            "(load balance) and '|' (fail-over) in one group; use {..},{..} groups",
        ),
        (
            "http://a:7611",
            None,
            "invalid value for '--url': receiverURL: 'http://a:7611' is not a URL like tcp://host:7611 "
            "or ssl://host:7711",
        ),
        ("tcp://a:7611|", None, "invalid value for '--url': receiverURL 'tcp://a:7611|' has an empty URL"),
        (
            "{tcp://a:7611},tcp://b:7611",
            None,
            "invalid value for '--url': receiverURL '{tcp://a:7611},tcp://b:7611': groups must be written "
            "{url,url},{url|url}",
        ),
        (
            "{tcp://a:7611},{tcp://b:7611}",
            "ssl://a:7711",
            "invalid value for '--auth-url': authenticatorURL 'ssl://a:7711' must list the same number and "
            "grouping of URLs as receiverURL '{tcp://a:7611},{tcp://b:7611}'",
        ),
        (
            "tcp://a:7611",
            "tcp://a:7711",
            "invalid value for '--auth-url': authenticatorURL: tcp://a:7711 must use ssl:// (connect is "
            "served on the TLS port only)",
        ),
    ],
)
def test_a_bad_receiver_list_is_refused_with_the_endpoint_message(
    tmp_path: Path, url: str, auth_url: str | None, message: str
) -> None:
    definition = tmp_path / "temps.json"
    definition.write_text(DEFINITION, encoding="utf-8")
    events = tmp_path / "missing.jsonl"  # never read: the URLs are checked first
    args = ["publish", "--url", url, "--password", "pw", "--stream", "temps", "--definition", str(definition)]
    if auth_url is not None:
        args += ["--auth-url", auth_url]
    result = CliRunner().invoke(main, [*args, str(events)])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == f"error: {message}"
