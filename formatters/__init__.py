"""formatters package."""
