"""Cards: the format and byte-preserving edits, the frontmatter splitter, ids and paths,
statuses, a scan of every card, `[[links]]`, and the pairs a person called distinct."""
