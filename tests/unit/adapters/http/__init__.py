"""Tests of adapters/http/."""
