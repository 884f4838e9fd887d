"""Click command groups of the `cepheus` CLI, one module per area (registered in app.cli)."""
