"""The visual report: duplicate groups as one self-contained HTML page (``isccd report``).

- :mod:`.model`: the report's own view of the groups and of the files, frozen;
- :mod:`.adapt`: the ``dupes`` answer as that view (the one place that reads its shape);
- :mod:`.preview`: a small picture, the first lines or an icon for one file;
- :mod:`.cache`: previews kept on disk between reports;
- :mod:`.thumbs`: the files as they are now, their previews from the cache or made in a small
  pool of low-priority worker processes (never in the daemon);
- :mod:`.page`: the HTML page, from the template and script in ``assets/``.
"""
