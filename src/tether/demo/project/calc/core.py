"""Arithmetic helpers."""


def add(a, b):
    return a + b


def mean(values):
    values = list(values)
    if not values:
        raise ValueError("mean of an empty sequence")
    return sum(values) / len(values)
