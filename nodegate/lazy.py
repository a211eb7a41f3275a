"""``cached_property`` for facts computed from immutable evidence (nodegate.collect, collect_fabric)."""

from __future__ import annotations


class cached_property:  # noqa: N801 - a drop-in for functools.cached_property
    """``functools.cached_property`` without its lock. Before Python 3.12 that lock is one per
    property for the whole class: a node's facts parsed in a gathering thread blocked every other
    thread computing the same property for any other node (the tests run while nodes are
    gathered, docs/performance.md). Facts are pure functions of an immutable bundle, so two
    threads computing one property at once only duplicate work. Once computed, the value sits in
    the instance's ``__dict__`` and is read without calling this descriptor at all."""

    def __init__(self, func):
        self.func = func
        self.attrname = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name):
        self.attrname = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        val = self.func(instance)
        instance.__dict__[self.attrname] = val
        return val
