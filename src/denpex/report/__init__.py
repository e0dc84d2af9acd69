"""Report: the incident as JSON (the contract), text for a terminal, Markdown for a ticket."""
