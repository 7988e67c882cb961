"""fuzzdce's results wing: what a campaign leaves behind and every reader of it: records, the
findings folder, reproducers, the report, the HTML page, merging, replay, issue text.

Modules:
- ``records``: the one versioned schema of bug.json and summary.json.
- ``store``: the findings folder on disk, written atomically.
- ``reproducers``: the one writer of reproducers: a bug's ``repro.py``, and the standalone script of
  torch and Thunder alone.
- ``repro``: running a bug's ``repro.py`` (``reproduce_all``) and what its checks found.
- ``report``: the one text report of a run, of merged runs or of a findings folder.
- ``html_report``: ``fuzzdce report DIR``: one self-contained HTML page.
- ``merge``: ``fuzzdce merge``: findings folders joined into one from their records alone.
- ``replay``: ``fuzzdce replay``: saved bugs rerun under placements.
- ``issue``: ``fuzzdce issue``: a Markdown issue body for Thunder's tracker.
- ``slow``: programs stopped at their cost limit: their records, report lines and rerun script.
"""
