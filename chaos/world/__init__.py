"""The world chaos builds around an agent: a scripted model server on 127.0.0.1, a sandbox, an effect
ledger. (Nothing is imported here: the ledger helper runs inside every effect of an agent.)"""
