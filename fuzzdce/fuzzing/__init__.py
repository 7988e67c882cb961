"""fuzzdce's fuzzing wing: the campaign: configuration, fuzz profiles, the Hypothesis driver,
steering, the ledger, shrinking and joining (their phases and time plan), the shrink passes, decision
bisection, the minimality check, minify, lanes and shards.

Modules:
- ``config``: a campaign's settings as plain data (``CampaignConfig``).
- ``profiles``: Hypothesis settings profiles shared by pytest and ``fuzzdce run``.
- ``driver``: the Hypothesis side of a campaign (``HypothesisDriver``).
- ``steering``: generation steered to what a campaign has not tested yet.
- ``ledger``: every program's triaged violations recorded as findings, and the folder kept in step.
- ``campaign``: a campaign made of its parts: generation, then the shrinker's phases.
- ``program_cost``: each program's cost limit, from what the campaign has measured.
- ``time_plan``: the phases, when each must end, and how long each took.
- ``shrinking``: after generation: each cause shrunk, joined and confirmed (the ``Shrinker``).
- ``shrink_passes``: every way of making a failing program smaller, registered by name.
- ``bisection``: which DCE decision breaks a failing program, found by bisection over its gated
  runs (the guide to decision bisection, with ``core.decisions``).
- ``minimality``: the check that each bug of a findings folder is at its statement-level minimum.
- ``minify``: ``fuzzdce minify``: a user's program reduced against one failure.
- ``minify_sources``: what ``fuzzdce minify`` reads.
- ``lanes``: parallel campaigns, each lane a process.
- ``shards``: which shard of a campaign this machine runs.
"""
