"""Tests of the Python clients (blocking and asyncio) and the wire conversions."""
