"""Test doubles: a scripted backend and a replay of recorded model turns."""
