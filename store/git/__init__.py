"""git: one runner (and the os-only spawn the freshness check starts), what .git says
without git, the one reader of `git status`, the one write door."""
