"""The command line: one module per command, all thin layers over the stage packages."""
