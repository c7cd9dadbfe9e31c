"""kloop: make GPU kernels fast with coding agents in a gated plan -> execute -> verify loop."""

__version__ = "0.1.0"
__all__ = ["__version__"]
