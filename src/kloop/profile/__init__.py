"""Profiler skill: collectors, readers into one KernelProfile, the playbook, digest and diff."""
