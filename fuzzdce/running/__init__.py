"""fuzzdce's running wing: running programs through Thunder: compile paths, running a path (its
calls, their variants, the time limit), placements, builds, sandboxed workers, evaluation, DCE
coverage, memory.

Modules:
- ``paths``: the compile paths, one ``CompilePath`` each (``PATHS``).
- ``path_running``: eager once, then a compile path under a placement (``run_path``).
- ``calls``: one call of a program's function, recorded as a ``Call``, and its float64 twin.
- ``variants``: the resized and guard calls' programs.
- ``watchdog``: a compile path's time limit, and the exceptions behind a path's end.
- ``placements``: the built-in DCE placements (``PLACEMENTS``) and ``resolve``: a placement by name.
- ``patching``: Thunder patched and restored exactly: a function and every alias of it.
- ``installed_thunder``: what the installed Thunder already does (native) or lacks (missing) of
  each built-in placement.
- ``splitter_fix``: the thunderfx splitter fix ``symcall-fixed`` emulates (a copy of Thunder's code).
- ``builds``: another Thunder build as a placement.
- ``buildworker``: the child process running another Thunder build.
- ``workers``: the one worker core: a child process with a time and memory limit.
- ``sandbox``: jobs run in a sandboxed child process, one at a time.
- ``interception``: what a placement replaced in Thunder, and a call run as a shadow on a snapshot
  of the trace being recorded (what ``decisions`` and ``compile_sharing`` both intercept calls with).
- ``compile_sharing``: one compile shared by every placement that changes nothing on a path.
- ``evaluate``: one program evaluated under every placement and path, every oracle on each.
- ``localise``: where a wrong value first goes wrong.
- ``decisions``: gating: a placement's calls done one by one as it does them or as unpatched
  Thunder does, and the edit each made (what ``fuzzing.bisection`` searches with).
- ``dce_calls``: what each call of Thunder's ``dce`` did to the decompositions it kept.
- ``coverage``: each placement's DCE activity against the reference.
- ``grad_rules``: which of Thunder's grad rules a path ran.
- ``stated_metadata``: each tensor of an execution trace as it runs, against what the trace states.
- ``script_program``: a reproducer's program, read from the reproducer file.
- ``memory``: resident memory of a campaign's processes.
- ``doctor``: ``fuzzdce doctor``: what this environment is.
"""
