"""Score the diagnosis against a labelled corpus of real logs (``make eval``)."""
