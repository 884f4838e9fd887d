#!/usr/bin/env bash
# `make run`: a node on the embedded SQLite registry with the pizza-shop sample deployed.
# The first run creates var/admin-password (the admin user's password; keep it private).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
(umask 077 && mkdir -p var)  # the registry, the admin password and the TLS key live here
if [[ -z "${CEPHEUS_ADMIN_PASSWORD:-}" ]]; then
    if [[ ! -s var/admin-password ]]; then
        (umask 077 && "$BIN/python" -c 'import secrets; print(secrets.token_urlsafe(12))' > var/admin-password)
    fi
    CEPHEUS_ADMIN_PASSWORD="$(cat var/admin-password)"
fi
export CEPHEUS_ADMIN_PASSWORD
"$BIN/cepheus" db upgrade
"$BIN/cepheus" apply samples/pizza/cepheus.toml
offset=$("$BIN/python" -c 'from app.config import load; import pathlib; print(load("conf/cepheus.toml").node.port_offset)')
cat <<INFO

  Cepheus node starting with the pizza-shop sample (Ctrl-C stops it).
  The console: http://127.0.0.1:$((9763 + offset))/  (user admin, password in var/admin-password)
  In another terminal:
    publish the sample events (55 s):  CEPHEUS_PASSWORD="\$(cat var/admin-password)" $BIN/python scripts/pizza_shop_publisher.py --port $((7611 + offset)) --ca-file var/tls/cert.pem
    or any JSON Lines / CSV file:       $BIN/cepheus publish --url tcp://127.0.0.1:$((7611 + offset)) --stream orderStream:1.0.0 --ca-file var/tls/cert.pem --password "\$(cat var/admin-password)" FILE
    or over HTTP:                       curl -u admin:"\$(cat var/admin-password)" -d '[["Order9","Ann","1","x","y"]]' http://127.0.0.1:$((9763 + offset))/events/orderStream:1.0.0
    health (details need the login):    curl -u admin:"\$(cat var/admin-password)" http://127.0.0.1:$((9763 + offset))/health/details
    results (table delivered_orders):   $BIN/python -c 'import sqlite3; print(sqlite3.connect("var/pizza.db").execute("select * from delivered_orders").fetchall())'
  (If CEPHEUS_ADMIN_PASSWORD was set for the first start, use that instead of var/admin-password.)

INFO
exec "$BIN/cepheus" server
