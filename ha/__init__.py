"""High availability and persistence: pure logic and the ports (`ports.py`) that `app/` implements.

Sees a snapshot as opaque bytes. Imports only `engine.events` and `engine.errors`; no I/O, no threads.
"""
