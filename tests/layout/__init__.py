"""Tests of the package's layout: its layers and its generated modules."""
