"""Tests of the stored formats and of stores written by earlier releases."""
