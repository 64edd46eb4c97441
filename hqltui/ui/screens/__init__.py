"""Screens: the main screen, the full-screen card, help and warnings."""
