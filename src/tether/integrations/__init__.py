"""tether under other agent frameworks: each subpackage needs its framework's extra."""
