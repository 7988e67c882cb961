"""fuzzdce's running wing: running programs through Thunder: compile paths, execution, placements, builds, sandboxed workers, evaluation, DCE coverage, memory."""
