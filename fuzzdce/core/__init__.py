"""fuzzdce's core wing: plain data and rules every other wing builds on: programs, records of outcomes, errors, signatures, portable traces, findings and bugs; imports no Thunder-running code."""
