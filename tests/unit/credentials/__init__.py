"""Tests of app/credentials: where upstream auth comes from."""
