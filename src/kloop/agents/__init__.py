"""Agents: one protocol, one adapter per agent kind, and the built-in offline agents."""
