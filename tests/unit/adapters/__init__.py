"""Tests of adapters/."""
