"""The management console: its pages, JSON API and operations endpoints.

Modules: `principal` (who is asking: session, bearer token or basic credentials; roles),
`security` (session key, CSRF, security headers), `entities` (JSON ↔ registry values, with
the field of every error), `actions` (what the API and the pages do to the registry), `api` (the
JSON API under `/api/v1/`), `openapi` (its document), `views` (the pages' blueprint; the pages
in `registry_pages`, `operation_pages` and `user_pages`, sharing `pages`), `services` (what the
console needs of the node), `errors` (how it refuses), `ops` (`/metrics`, `/livez`, `/readyz`).
`app.webapp.create_app` puts them together with the node's own endpoints. Every change goes to the registry, the path
`cepheus apply` takes, so it reaches the running plans of every member.
"""
