"""Cards: the format and byte-preserving edits, the frontmatter splitter, Markdown's fences
and headings, ids and paths, statuses, a scan of every card, `[[links]]`, and the pairs a
person called distinct."""
