"""The node's hardened HTTP port: what every request meets before a blueprint sees it.

`server` (waitress in threads of the node's process), `guard` (waitress's server and
connections with the limits applied in its I/O thread), `limits` (which connections may open,
which must close), `screen` (what a request's head alone decides), `drain` (the end of a
refused connection, so the client reads the reply), `basic_auth` (the basic-authentication
check every endpoint shares) and `web` (the base Flask app: `/health` and JSON errors).

Imports nothing of the node, the cluster or the console: they hand it blueprints and a
`Credentials` (`app.auth`).
"""
