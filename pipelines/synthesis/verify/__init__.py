"""Checks a synthesized trajectory must pass: reasoning consistency, accepted-action sets, replay."""
