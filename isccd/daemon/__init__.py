"""The daemon: the composition root that builds every component from the settings and owns the
lifecycle (start, reload, stop).
"""
