"""Turning a Solution into a callable (python, triton, cpp, cuda, hip) behind one interface."""
