"""Tests of the HTTP/JSON door and the live page."""
