"""The world chaos builds around an agent: a scripted model server on 127.0.0.1, a sandbox, an effect
ledger. (Nothing is imported here: the ledger helper runs inside every effect of an agent.)"""

MCP_TOKEN_ENV = "CHAOS_MCP_TOKEN"  # the case's token, the first part of the MCP server's HTTP path
