"""Typed models of every kind we serve, with their validation and defaults. No I/O here."""
