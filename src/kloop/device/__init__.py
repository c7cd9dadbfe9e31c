"""What hardware is here (cpu / cuda / rocm), its peak rates, and which tools exist."""
