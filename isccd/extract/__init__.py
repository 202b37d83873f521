"""Media I/O: from a file on disk to the plain inputs of the ISCC algorithms.

Nothing here computes a code. Each module turns one kind of content into what a generator in
:mod:`isccd.iscc` takes: pixels (:mod:`.image`), text (:mod:`.text`), Chromaprint features
(:mod:`.audio`), MPEG-7 frame signatures (:mod:`.video`, :mod:`.mp7`), and title and description
(:mod:`.meta`, :mod:`.xmp`, :mod:`.tags`, :mod:`.probe`). :mod:`.source` opens files safely and
reads them once; :mod:`.mediatype` decides how a file is processed, from its name and the
signatures of :mod:`.signatures`; :mod:`.tools` runs external programs within bounds. Failures
raise the :class:`isccd.errors.ExtractionError` family; :mod:`isccd.hashing` turns them into
per-file issues.
"""
