"""Adapters that put tether under agent frameworks (session stores, checkpointers): keep the
framework and its agent code, change one line. Each needs its framework's optional extra and is
imported only when used (``import tether`` imports none of them)."""
