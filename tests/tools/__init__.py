"""Tests of the tools the suite and its set-up rely on."""
