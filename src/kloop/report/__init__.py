"""Human-readable reports: HTML and terminal views."""
