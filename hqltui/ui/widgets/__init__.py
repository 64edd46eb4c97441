"""Widgets of the main screen; each one only displays what the app hands it."""
