"""Tests of the ranked set: byte compatibility with the Record Layer's, behaviour against a model."""
