"""Tests of formatters/."""
