"""tether under other agent frameworks (session stores, checkpointers): each module needs its
framework's extra."""
