"""The Textual app. It only calls ``hqltui.core``; no widget reads a file, runs SQL or embeds."""
