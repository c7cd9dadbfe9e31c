"""The trust boundary: supervisor, sandbox process, comparators, timing, audits, result JSON."""
