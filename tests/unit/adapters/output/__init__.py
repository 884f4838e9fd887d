"""Tests of adapters/output/."""
