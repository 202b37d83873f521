"""Imported by the workers' fork server (:data:`isccd.forkserver.PRELOAD`) to load the compiled
kernels before any worker is forked, so that every worker starts with them: importing this
module is what it is for (:func:`isccd.iscc.kernels.warmup`, through
:mod:`isccd.hashing.machine`)."""

from __future__ import annotations

from isccd.iscc.kernels import warmup

warmup()
