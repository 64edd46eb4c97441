"""What many test modules share: vault fixtures, rendering a widget's text, waits on the
app's events, and the reference arithmetic the passage kernels are checked against."""
