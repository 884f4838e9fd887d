"""`json_error`: the one shape of an error reply on the node's HTTP port, `{"error": "..."}`.

Used by the events receiver here and by every endpoint of the node and the console.
"""

from __future__ import annotations

import json

from flask import Response


def json_error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps({"error": message})
    return Response(body, status=status, mimetype="application/json", headers=headers)
