"""Amazon Bedrock (the Converse API): the `bedrock` kind's translation between OpenAI's chat
format and Converse's requests, answers and binary event streams (pure, no I/O; signing and
credentials live in app/credentials/)."""
