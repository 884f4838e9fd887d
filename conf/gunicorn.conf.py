# The console as a separate web tier: `gunicorn -c conf/gunicorn.conf.py` (docs/console.md).
#
# It serves the same Flask app as a node's console port, without a node (`app.webapp.web_tier`):
# pages and JSON API over the registry of $CEPHEUS_CONFIG (a node's configuration file). Every
# change goes to the registry, from where the nodes deploy it. Put TLS in front of it (a proxy)
# and set `[console] secure_cookies = true`.
import os

wsgi_app = "app.webapp:web_tier()"
bind = os.environ.get("CEPHEUS_WEB_BIND", "127.0.0.1:9764")
workers = int(os.environ.get("CEPHEUS_WEB_WORKERS", "2"))
threads = 4  # gthread workers: a slow client holds a thread, not a process
worker_class = "gthread"
timeout = 30  # a request that takes longer is cut off (the worker restarts)
graceful_timeout = 20
keepalive = 5
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
accesslog = "-"
errorlog = "-"
