"""Load: records -> objects, checked and bounded on files from anyone."""
