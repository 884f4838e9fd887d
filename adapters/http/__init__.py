"""The HTTP JSON receiver: `POST /events/<name>:<version>`, served on the node's Flask app.

Modules, each with one job:

- `events`: events from JSON and CSV into rows of a stream (`StreamShape`), `EventFormatError`
  (also for the console's simulator and `cepheus publish`);
- `json_body`: `load_json`, a request body parsed with its nesting bounded;
- `replies`: `json_error`, the one shape of an error reply;
- `receiver`: `events_blueprint` and `publish_json`, given the node's streams and ingress
  (`Streams`) and its credential check as callables.

Like `adapters.thrift`, imports nothing of `app` and only `engine.errors` and `engine.types`
of the engine.
"""
