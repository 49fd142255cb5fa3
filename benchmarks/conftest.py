"""Benchmark settings: only used when pytest runs benchmarks/ (the default testpaths is tests/)."""


def pytest_configure(config):
    # Time with the garbage collector off, as compare.py does: a collection landing inside
    # one round would otherwise dominate it. Applies to autosave and pickle alike.
    if hasattr(config.option, "benchmark_disable_gc"):
        config.option.benchmark_disable_gc = True
