"""The instructions ToolRelay gives a model to summarise a conversation for compaction.

They are appended as the last user turn, after the conversation as it was sent (the client's
system prompt and tools unchanged, tools not callable), so the request shares its prefix with
the turns before it and a provider's prompt cache still applies. What they ask for is what a
coding agent needs to carry on with only the summary and the user's own messages: the task and
its constraints, what was decided and done (files, commands, results, errors), where things
stand, and what is left."""

INSTRUCTIONS = """\
Stop here and do not call any tool. The conversation above is about to be compacted: \
everything before this message except the user's own messages will be replaced by the summary \
you write now, and the work will carry on from that summary alone. Write it for whoever \
continues the work (possibly you, with no other memory of this conversation).

Be concise but complete; keep exact names, paths, commands, identifiers, numbers and error \
messages where they matter. Cover, under these headings (leave out a heading with nothing \
under it):

1. Task: what the user asked for, their goals, requirements, constraints and preferences \
(quote the user's words where precision matters).
2. Decisions: what was decided and why, approaches tried and rejected.
3. Files: each file read, created or changed, and how (what was added, removed or fixed).
4. Commands and results: commands and tools run, and what they showed (test results, \
outputs that mattered).
5. Errors: errors met, how each was resolved, or that it is still open.
6. Current state: where the work stands right now, what was being done at the moment of \
this summary.
7. Next steps: what is left to do, in order, including anything the user asked for that is \
not done yet.

Answer with the summary only, no preamble."""
