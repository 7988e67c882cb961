"""fuzzdce's fuzzing wing: the campaign: configuration, fuzz profiles, the Hypothesis driver, steering, the ledger, phases, lanes and shards."""
