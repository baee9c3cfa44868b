"""Compaction: a conversation summarised by the model that serves it (a `compaction_trigger`
item, `POST /v1/responses/compact`), above routing: the summary is one dispatched request."""
