"""Filters: small keep-or-drop decisions over trajforge records, composed into Beam stages by pipelines/."""
