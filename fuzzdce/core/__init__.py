"""fuzzdce's core wing: plain data and rules every other wing builds on: programs, records of
outcomes, errors, signatures, portable traces, faults, findings and bugs; imports no Thunder-running
code.

Modules:
- ``vocabulary``: the kinds fuzzdce names, as ``StrEnum``s; imports nothing of fuzzdce.
- ``errors``: fuzzdce's exceptions (``UsageError``, ``HarnessError``).
- ``model``: the records every part passes around (``Outcome``, ``Call``, ``Violation``) and the
  extension points (``Oracle``, ``CompilePath``, ``Placement``).
- ``tracebacks``: where an exception was raised (its frame and symbol), read from its traceback;
  imports nothing of fuzzdce.
- ``program``: the program IR, its input domains and program arithmetic.
- ``program_source``: a straight-line Python function read back into a ``Program``.
- ``signatures``: messages normalised, signatures and short ids.
- ``faults``: a failure's fault, where Thunder fails: one dataclass per kind, one constructor each.
- ``joining``: the one rule deciding whether two failures are one fault, and what keeps bugs apart.
- ``decisions``: a placement's DCE decisions as data, and a bug known by its decision.
- ``findings``: triage against the reference, ``Finding``, ``Bug`` and the ``FindingStore``.
- ``portable_trace``: a Thunder trace as plain data, which crosses processes and Thunder builds.
- ``subsymbols``: how a placement's subsymbols differ from stock's: traces aligned modulo renaming.
- ``liveness``: whether a subsymbol a DCE removed was dead where it stood.
- ``dce_activity``: a placement's DCE activity on a path, as plain data.
- ``grad_rule_names``: Thunder's grad rules by name, and which one a torch call reaches.
- ``timeline``: programs evaluated and bugs found over a campaign's time.
- ``versions``: the versions a result was made with.
- ``quiet``: library warnings silenced.
"""
