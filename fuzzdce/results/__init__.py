"""fuzzdce's results wing: what a campaign leaves behind and every reader of it: records, the findings folder, reproducers, the report, the HTML page, merging, replay, issue text."""
