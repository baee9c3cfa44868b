"""The console (CONTRACT.md, "Console: request logs, keys, a web page"): the request log and
run-time keys in a database, /v1/logs, /v1/keys and /ui. It reads what the request record,
the tool-call audit and spend already hold and is read by nobody on the request path. Only
`settings` and `capture` may be imported without a configured database: the rest loads
SQLAlchemy and its drivers."""
